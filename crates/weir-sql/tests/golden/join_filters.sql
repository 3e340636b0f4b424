-- Conditions on one side of a join: they filter that side's rows before
-- the join where the result stays the same (a WHERE on an inner join's
-- sides, an outer join's kept side, an ON condition on a dropped side),
-- and only the joined rows elsewhere (an ON condition on the kept side
-- of an outer join; a WHERE on the side padded with NULLs, where IS NULL
-- keeps the padded rows). Arrival order decides the changelogs of outer
-- joins, so the rows they leave are compared.
-- compare: final rows
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
SELECT o.id, b.city FROM orders o JOIN buyers b ON o.buyer = b.name
WHERE o.amount > 3 AND (b.city = 'Berlin' OR b.city = 'Paris') AND o.id < b.id;
SELECT o.id, b.city FROM orders o, buyers b
WHERE o.buyer = b.name AND b.id > 3 AND o.id <> 3;
SELECT o.id, o.amount, b.city FROM orders o LEFT JOIN buyers b
  ON o.buyer = b.name AND o.amount > 4 AND b.city <> 'Lisbon'
WHERE o.id > 1;
SELECT o.id, b.name FROM orders o LEFT JOIN buyers b ON o.buyer = b.name
WHERE b.name IS NULL OR b.id > 5;
SELECT o.id, b.name, b.city FROM orders o RIGHT JOIN buyers b
  ON o.buyer = b.name AND o.amount < 10 AND b.id < 9
WHERE b.city <> 'Rome';
SELECT o.id, b.name FROM orders o FULL JOIN buyers b ON o.buyer = b.name AND o.id > 4
WHERE o.id IS NULL OR b.id IS NULL OR o.amount > 2;
