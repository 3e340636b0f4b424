-- compare: final rows
-- Common table expressions: a CTE read by a later one and by the query;
-- a CTE named as a table, whose own query reads the table; column names
-- given in WITH and after a subquery; a CTE as a window TVF's table; a
-- CTE read on both sides of a join; WITH in a subquery and in a view.
-- (The view joins two files, whose rows' order makes its changelog: the
-- rows left are compared.)
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
WITH big AS (SELECT id, buyer, amount FROM orders WHERE amount > 2),
  per_buyer (who, n, total) AS (SELECT buyer, COUNT(*), SUM(amount) FROM big GROUP BY buyer)
SELECT who, n, total FROM per_buyer WHERE n > 1;
WITH orders AS (SELECT id, UPPER(buyer) AS buyer FROM orders WHERE id < 4)
SELECT * FROM orders;
SELECT x, y FROM (SELECT id, buyer FROM orders) AS t (x, y) WHERE x > 3;
WITH recent AS (SELECT id, amount, ts FROM orders WHERE buyer <> 'bob')
SELECT window_start, COUNT(*) AS n, SUM(amount) AS total
FROM TABLE(TUMBLE(TABLE recent, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
WITH b AS (SELECT name, city FROM buyers)
SELECT l.name, r.city FROM b AS l JOIN b AS r ON l.name = r.name AND l.city < r.city;
SELECT buyer, n FROM (
  WITH c AS (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer)
  SELECT buyer, n FROM c
) WHERE n >= 2;
CREATE VIEW cities AS
WITH o AS (SELECT buyer FROM orders), j AS (SELECT b.city FROM o JOIN buyers b ON o.buyer = b.name)
SELECT city, COUNT(*) AS n FROM j GROUP BY city;
SELECT * FROM cities;
