-- SELECT DISTINCT over an insert-only table: each distinct row once, the
-- first time it is seen (an aggregation without aggregates).
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT DISTINCT buyer FROM orders;
SELECT DISTINCT UPPER(buyer) AS b, id % 2 AS parity FROM orders WHERE id > 1;
