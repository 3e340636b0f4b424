-- CUMULATE: windows that share a start and grow by a step up to a size;
-- each row counts in every window of its cycle that ends after it.
-- SESSION: a buyer's orders less than 5 s apart are one session, ended
-- 5 s after its last order. Late rows are dropped (watermarks per row).
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT window_start, window_end, COUNT(*) AS n, SUM(amount) AS total
FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '20' SECOND))
GROUP BY window_start, window_end;
SELECT buyer, window_start, window_end, window_time, COUNT(*) AS n, MAX(amount) AS biggest
FROM TABLE(SESSION(TABLE orders PARTITION BY buyer, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY buyer, window_start, window_end, window_time;
SELECT id, window_start, window_end
FROM TABLE(CUMULATE(DATA => TABLE orders, TIMECOL => DESCRIPTOR(ts),
  STEP => INTERVAL '4' SECOND, SIZE => INTERVAL '8' SECOND))
WHERE id < 4;
