-- INTERSECT ALL and EXCEPT ALL, as Flink rewrites them: both sides' rows
-- counted per distinct row by an updating aggregation, each of its rows
-- emitted (with its kind) as often as the row is in the result: the
-- lesser count, or the left count less the right one; NULLs equal.
-- Each side scans the file on its own, and which side's rows come first
-- decides the intermediate rows, so the rows left are compared.
-- compare: final rows
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer FROM orders WHERE id > 2 INTERSECT ALL SELECT buyer FROM orders WHERE id < 8;
SELECT buyer FROM orders EXCEPT ALL SELECT buyer FROM orders WHERE id > 6;
SELECT buyer, amount FROM orders WHERE amount IS NULL OR amount > 2 EXCEPT ALL SELECT buyer, amount FROM orders WHERE id > 8 OR amount IS NULL;
SELECT MOD(id, 3) AS m FROM orders INTERSECT ALL SELECT MOD(id, 2) FROM orders;
