-- UNION ALL of two queries over the same table (read once, as Flink
-- reuses the source), columns named by the left query. Columns of two
-- numeric types are cast to the least restrictive one (INT and BIGINT to
-- BIGINT, DECIMAL and INT to a DECIMAL holding both, anything and DOUBLE
-- to DOUBLE), in UNION ALL, UNION and INTERSECT alike.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, buyer FROM orders WHERE id < 3
UNION ALL
SELECT id * 100, UPPER(buyer) FROM orders WHERE buyer = 'carol';
SELECT CAST(id AS INT) AS x, amount FROM orders WHERE id < 3
UNION ALL SELECT id * 100, CAST(id AS INT) FROM orders WHERE id > 8;
SELECT amount FROM orders WHERE id < 3 UNION ALL SELECT CAST(id AS DOUBLE) / 4 FROM orders WHERE id > 8;
SELECT CAST(id AS INT) FROM orders UNION SELECT id FROM orders WHERE id > 5;
SELECT CAST(id AS INT) FROM orders INTERSECT SELECT id + 5 FROM orders;
