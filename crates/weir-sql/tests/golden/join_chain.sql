-- compare: final rows
-- More than one JOIN in a FROM, joined left to right, each ON naming any
-- relation before it: inner joins with a WHERE after, an outer join then
-- an inner one, a chain grouped, a table joined twice, and a temporal
-- join (each order's tier as of its time) followed by a regular join;
-- three tables with commas, each WHERE condition at the first join it
-- can be checked at; a join's rows (columns of one name in both tables,
-- told apart by their tables) filtered by IN and NOT EXISTS subqueries,
-- and grouped by a ROLLUP.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
CREATE TABLE tiers (
  buyer STRING, tier STRING, since TIMESTAMP(3),
  PRIMARY KEY (buyer) NOT ENFORCED,
  WATERMARK FOR since AS since - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/tiers.csv', 'format' = 'csv');
SELECT o.id, b.city, p.kind
FROM orders o JOIN buyers b ON o.buyer = b.name JOIN payments p ON p.order_id = o.id
WHERE p.kind = 'card';
SELECT o.id, b.city, p.kind, p.order_id
FROM orders o LEFT JOIN payments p ON p.order_id = o.id
JOIN buyers b ON b.name = o.buyer AND b.id < 5;
SELECT b.city, COUNT(*) AS n, SUM(o.amount) AS total
FROM orders o JOIN buyers b ON o.buyer = b.name JOIN payments p ON p.order_id = o.id
GROUP BY b.city;
SELECT o.id, p.kind, q.kind AS other
FROM orders o JOIN payments p ON p.order_id = o.id
JOIN payments q ON q.order_id = o.id AND q.paid > p.paid;
SELECT o.id, t.tier, b.city
FROM orders o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t ON o.buyer = t.buyer
JOIN buyers b ON b.name = o.buyer;
SELECT o.id, b.city, p.kind
FROM orders o, buyers b, payments p
WHERE o.buyer = b.name AND p.order_id = o.id AND b.id > 2 AND p.kind <> 'cash';
SELECT o.id, b.id AS bid, b.city FROM orders o JOIN buyers b ON o.buyer = b.name
WHERE o.id IN (SELECT order_id FROM payments WHERE kind = 'card') AND b.id > 2;
SELECT b.city, o.buyer, COUNT(*) AS n, SUM(o.amount) AS total
FROM orders o JOIN buyers b ON o.buyer = b.name
WHERE o.id > 1 GROUP BY ROLLUP (b.city, o.buyer);
SELECT o.id FROM orders o
WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id) AND o.id IN (SELECT id FROM buyers);
