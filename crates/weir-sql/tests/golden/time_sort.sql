-- ORDER BY the event-time attribute without LIMIT: the rows in time
-- order once the watermark passes them; rows not after the last time
-- emitted are late and dropped (bob's 08:00:05 after the watermark
-- reached 08:00:10, alice's 08:00:09 after 08:00:19).
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, buyer, ts FROM orders ORDER BY ts;
SELECT id, amount, ts FROM orders WHERE amount > 1 ORDER BY ts ASC, amount DESC;
