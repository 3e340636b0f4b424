-- Interval joins: bounds between the two sides' event times (both with
-- watermarks) make Flink's interval join: each order meets the payments
-- of its id within 5 s after it (inclusive), or strictly within 1 s
-- before to 5 s after; the state is cleaned up as watermarks pass. (The
-- watermarks lag an hour: which rows are late would otherwise depend on
-- how the two files' rows interleave.)
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING,
  WATERMARK FOR paid AS paid - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
SELECT o.id, o.buyer, p.paid, p.kind
FROM orders o JOIN payments p
  ON o.id = p.order_id AND p.paid BETWEEN o.ts AND o.ts + INTERVAL '5' SECOND;
SELECT o.id, p.paid
FROM orders o, payments p
WHERE o.id = p.order_id AND p.paid > o.ts - INTERVAL '1' SECOND
  AND o.ts + INTERVAL '5' SECOND > p.paid AND p.kind = 'card';
