-- compare: final rows
-- IN and EXISTS subqueries (semi joins) and INTERSECT: a row passes once a
-- row of the subquery matches it, whichever arrives first. IN over a
-- subquery with its own filter and over a GROUP BY's keys; a correlated
-- EXISTS with a key and a condition across the two sides (and one whose
-- unqualified names are the subquery's own, as SQL resolves them, though
-- the outer table has them too; and ones whose other conditions name an
-- outer column: a NULL there matches nothing, as Flink decorrelates
-- them); a NULL amount
-- matches nothing in IN; INTERSECT compares whole rows, NULLs equal, and
-- keeps distinct rows; the rows passed then grouped. The changelogs of
-- the grouped rows and of IN over a GROUP BY (which retracts) depend on
-- which file's rows arrive first: the rows left are compared.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
SELECT id, buyer FROM orders WHERE id IN (SELECT order_id FROM payments WHERE kind = 'card');
SELECT o.id, o.amount FROM orders AS o
WHERE o.amount > 2 AND EXISTS (
  SELECT * FROM payments p WHERE p.order_id = o.id AND p.paid > o.ts + INTERVAL '5' SECOND);
SELECT buyer, COUNT(*) AS n FROM orders
WHERE buyer IN (SELECT name FROM buyers) AND id IN (SELECT order_id FROM payments)
GROUP BY buyer;
SELECT id FROM orders WHERE amount IN (SELECT CAST(id AS DECIMAL(10, 2)) FROM orders WHERE id < 4);
SELECT buyer FROM orders WHERE buyer IN (SELECT buyer FROM orders GROUP BY buyer HAVING COUNT(*) > 2);
SELECT buyer, amount FROM orders WHERE id > 2
INTERSECT
SELECT buyer, amount FROM orders WHERE id < 6 OR amount IS NULL;
SELECT name FROM buyers INTERSECT SELECT buyer FROM orders;
SELECT o.id, o.buyer FROM orders o
WHERE EXISTS (SELECT 1 FROM orders WHERE buyer = o.buyer AND id > o.id AND amount > 2);
SELECT a.id FROM orders a
WHERE EXISTS (SELECT * FROM orders b WHERE b.amount > a.amount OR b.buyer = 'dave');
SELECT a.id FROM orders a
WHERE EXISTS (SELECT * FROM orders b WHERE b.buyer = a.buyer AND (b.amount > a.amount OR b.id = 10));
