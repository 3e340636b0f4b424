-- OVER aggregations (each row once, with aggregates over its partition's
-- rows up to it, in event-time order). After 08:00:12 the watermark is
-- 08:00:10: bob's row of 08:00:05 that follows is late for an unbounded
-- frame (not after the watermark) but not for a bounded one (after bob's
-- last row taken, 08:00:04), as in Flink; alice's row of 08:00:09 comes
-- after her 08:00:12 was taken and is late for both. The last query's
-- frame is a RANGE whose rows of one time are peers.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING,
  WATERMARK FOR paid AS paid - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
SELECT id, buyer, amount, SUM(amount) OVER w AS total, COUNT(*) OVER w AS n,
       MAX(amount) OVER w AS biggest
FROM orders
WINDOW w AS (PARTITION BY buyer ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW);
SELECT id, buyer,
  SUM(amount) OVER (PARTITION BY buyer ORDER BY ts
    RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS recent,
  AVG(amount) OVER (PARTITION BY buyer ORDER BY ts
    RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS mean
FROM orders;
SELECT id, COUNT(*) OVER (ORDER BY ts) AS so_far, MIN(amount) OVER (ORDER BY ts) AS least,
       id * 10 + COUNT(amount) OVER (ORDER BY ts) AS mixed
FROM orders;
SELECT id, buyer, SUM(id) OVER (PARTITION BY buyer ORDER BY ts
  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ids
FROM orders WHERE id <> 3;
SELECT order_id, kind, COUNT(*) OVER (PARTITION BY kind ORDER BY paid
  RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS recent,
  LISTAGG(CAST(order_id AS STRING)) OVER (PARTITION BY kind ORDER BY paid
  RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS ids
FROM payments;
