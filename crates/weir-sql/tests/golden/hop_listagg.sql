-- Hopping windows of 10 s every 5 s listing their rows: each window's
-- LISTAGG merges its two slices, the later slice's values first, as
-- Flink's sliding windows list them.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, window_start, LISTAGG(CAST(id AS STRING)) AS ids,
  LISTAGG(CAST(amount AS STRING), ';') AS amounts, COUNT(*) AS n
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
GROUP BY buyer, window_start, window_end;
