-- LAG in OVER windows: the value (NULL or not) of the row an offset
-- before in the partition's event-time order, its default when there is
-- none; beside another aggregate of the window; the rows of one time
-- are peers and share one value (orders 4 and 9 of 08:00:09 in a table
-- whose watermark lets no row be late; LAG takes no ROWS or RANGE frame,
-- as in Flink, so its window's is RANGE UNBOUNDED PRECEDING); late rows
-- dropped as for any OVER aggregation.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE all_orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING,
  WATERMARK FOR paid AS paid - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
SELECT id, buyer, amount, LAG(amount) OVER w AS before1,
  LAG(id, 2, CAST(-1 AS BIGINT)) OVER w AS before2, LAG(buyer, 0) OVER w AS same
FROM orders WINDOW w AS (PARTITION BY buyer ORDER BY ts);
SELECT id, amount, LAG(amount) OVER w AS before1,
  SUM(amount) OVER w AS so_far
FROM orders WINDOW w AS (ORDER BY ts);
SELECT order_id, kind, LAG(order_id) OVER (ORDER BY paid) AS previous,
  LAG(kind, 3) OVER (ORDER BY paid) AS third
FROM payments;
SELECT id, LAG(id) OVER w AS previous, LAG(id, 2) OVER w AS back2, COUNT(*) OVER w AS n
FROM all_orders WINDOW w AS (ORDER BY ts);
