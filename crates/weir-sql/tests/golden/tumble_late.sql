-- Tumbling windows with late rows: after 08:00:12 the watermark is
-- 08:00:10, so the rows of 08:00:05 and 08:00:09 that follow are late for
-- [08:00:00, 08:00:10) and dropped; NULL amounts are skipped by SUM.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT window_start, window_end, buyer, SUM(amount) AS total, COUNT(*) AS n,
       COUNT(amount) AS priced, MIN(amount) AS smallest, MAX(id) AS last_id
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, buyer;
