-- SELECT * reads every column, also when WHERE names only some (the
-- columns a query reads are the only ones its source parses).
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT * FROM orders WHERE id < 3;
SELECT *, id + 1 AS after_id FROM orders WHERE amount > 10;
SELECT o.* FROM orders AS o WHERE o.id = 5;
