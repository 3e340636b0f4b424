-- A regular inner join of two insert-only tables: every pair of rows with
-- equal keys, whichever arrives first; a second condition checked on each
-- pair; ambiguous names qualified. alice has two buyer rows (two
-- matches each), dave none, erin no orders.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
SELECT o.id, b.city, o.amount, b.id AS buyer_id
FROM orders AS o JOIN buyers AS b ON o.buyer = b.name AND o.id > b.id;
SELECT b.city, COUNT(*) AS n
FROM orders o INNER JOIN buyers b ON b.name = o.buyer
GROUP BY b.city;
