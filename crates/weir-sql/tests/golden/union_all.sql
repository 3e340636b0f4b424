-- UNION ALL of two queries over the same table (read once, as Flink
-- reuses the source), columns named by the left query.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, buyer FROM orders WHERE id < 3
UNION ALL
SELECT id * 100, UPPER(buyer) FROM orders WHERE buyer = 'carol';
