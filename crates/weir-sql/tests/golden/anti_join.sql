-- compare: final rows
-- NOT IN, NOT EXISTS (anti joins) and EXCEPT: a row passes while no row
-- of the subquery matches it, and is taken back when one comes, so the
-- changelog depends on which file's rows arrive first; the rows left are
-- compared. NOT IN is SQL's: a NULL among the subquery's values, or in
-- the row's, keeps every row out; NOT EXISTS is not so.
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
SELECT id, buyer FROM orders WHERE id NOT IN (SELECT order_id FROM payments);
SELECT id FROM orders WHERE amount NOT IN (SELECT amount FROM orders WHERE id > 8);
SELECT id FROM orders WHERE amount NOT IN (SELECT amount FROM orders WHERE id = 4);
SELECT o.id FROM orders o
WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id AND p.kind = 'card');
SELECT b.name, b.city FROM buyers b
WHERE NOT EXISTS (SELECT id FROM orders o WHERE o.buyer = b.name AND o.amount > 10);
SELECT buyer FROM orders EXCEPT SELECT name FROM buyers;
SELECT buyer, amount FROM orders EXCEPT SELECT buyer, amount FROM orders WHERE id > 5;
SELECT COUNT(*) AS n FROM orders WHERE NOT (id IN (SELECT order_id FROM payments));
SELECT id, name FROM buyers b
WHERE NOT EXISTS (SELECT 1 FROM orders WHERE buyer = b.name AND id < b.id);
SELECT a.id FROM orders a
WHERE NOT EXISTS (SELECT * FROM orders b WHERE b.amount > a.amount OR b.buyer = 'zed');
