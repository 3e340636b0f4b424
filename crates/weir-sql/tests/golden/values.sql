-- Constant rows: VALUES as a query and as a table in FROM (its columns
-- named after it, types widened across rows) and a SELECT without FROM.
-- CREATE … IF NOT EXISTS of an existing table or view does nothing; a
-- view may name its columns.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE IF NOT EXISTS orders (x INT) WITH ('connector' = 'print');
CREATE VIEW big (who, how_much) AS SELECT buyer, amount FROM orders WHERE amount > 10;
CREATE VIEW IF NOT EXISTS big AS SELECT 1;
SELECT who, how_much FROM big;
VALUES (1, 'one'), (2, 'two'), (3, CAST(NULL AS STRING));
SELECT 1 + 2 AS three, UPPER('abc'), CAST('2020-04-15' AS DATE) AS d;
SELECT n * 2 AS doubled, name FROM (VALUES (1, 'a'), (20, 'b'), (300, 'c')) AS t (n, name) WHERE n > 1;
SELECT x FROM (VALUES (1), (2.5), (CAST(3 AS BIGINT))) AS t (x);
SELECT b, COUNT(*) AS n FROM (VALUES (1, TRUE), (2, FALSE), (3, TRUE)) AS t (a, b) GROUP BY b;
