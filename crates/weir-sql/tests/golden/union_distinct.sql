-- UNION (without ALL): the distinct rows of both inputs, each emitted the
-- first time it is seen.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
SELECT buyer FROM orders WHERE id < 5 UNION SELECT buyer FROM orders WHERE id > 3;
SELECT id AS n FROM orders UNION SELECT order_id FROM payments;
SELECT kind FROM payments UNION DISTINCT SELECT kind FROM payments;
