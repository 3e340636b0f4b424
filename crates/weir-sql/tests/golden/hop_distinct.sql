-- Hopping windows of 10 s every 5 s: a row late for one window still
-- counts in the next; COUNT(DISTINCT), HAVING, expressions over aggregates.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT window_start, window_end, COUNT(DISTINCT buyer) AS buyers, COUNT(*) * 10 AS tenfold,
       AVG(id) AS avg_id
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
WHERE id <> 3
GROUP BY window_start, window_end
HAVING COUNT(*) > 1;
