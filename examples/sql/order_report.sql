-- The order report of examples/order_report.rs in Flink SQL: per user, the
-- orders of each 10 seconds of event time, tolerating 2 seconds of
-- disorder.
--
--   cargo run --release -p weir-cli -- sql -f examples/sql/order_report.sql
--
-- What differs from the DataStream version, because Flink SQL's window
-- aggregations cannot say it: there is no allowed lateness, so an order
-- later than the watermark (o7, o9 in the sample) is dropped instead of
-- re-firing its window or going to a side output; Weir counts it in the
-- window operator's numLateRecordsDropped metric, as Flink does. And SQL's
-- watermark is the expression itself (latest time - 2 s), one millisecond
-- later than the DataStream API's bounded out-of-orderness (latest time -
-- 2 s - 1 ms); on this input the same windows fire after the same orders.

-- A watermark after every order that advances it, so that which orders are
-- late does not depend on timing (the default is every 200 ms).
SET 'pipeline.auto-watermark-interval' = '0';

CREATE TABLE orders (
  order_id   STRING,
  user_id    STRING,
  money      DECIMAL(10, 2),
  order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time - INTERVAL '2' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = 'examples/data/orders.csv',
  'format' = 'csv',
  -- The sample has '#' comments and one line that is not an order.
  'csv.allow-comments' = 'true',
  'csv.ignore-parse-errors' = 'true'
);

SELECT user_id, window_start, window_end,
       COUNT(*) AS orders, SUM(money) AS total, LISTAGG(order_id, ', ') AS ids
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(order_time), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, user_id;
