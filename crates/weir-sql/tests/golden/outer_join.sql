-- Outer joins: unmatched rows padded with NULLs; a padded row is taken
-- back (-D) when a partner arrives. Which table's rows arrive first
-- decides the changelog, so the rows it leaves are compared.
-- compare: final rows
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
SELECT o.id, o.buyer, b.city FROM orders o LEFT JOIN buyers b ON o.buyer = b.name;
SELECT b.name, b.city, o.id FROM orders o RIGHT OUTER JOIN buyers b ON o.buyer = b.name AND o.id > b.id;
SELECT o.id, b.name, b.id FROM orders o FULL OUTER JOIN buyers b ON o.buyer = b.name AND o.amount > 5;
SELECT b.city, COUNT(o.id) AS orders FROM buyers b LEFT JOIN orders o ON o.buyer = b.name GROUP BY b.city;
