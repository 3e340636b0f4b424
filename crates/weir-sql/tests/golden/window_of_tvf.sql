-- A GROUP BY of a window TVF's window columns, through a subquery: a
-- window aggregation, late rows dropped, one row per window.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT window_start, window_end, COUNT(*) AS n, SUM(amount) AS total
FROM (
  SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
  WHERE amount > 1
) GROUP BY window_start, window_end;
