-- CURRENT_WATERMARK(ts): the watermark the row's calc has seen, the one
-- before the row's own (NULL before the first); late rows picked out by
-- it, or labelled, as Flink's documentation does for a late-data table.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, ts, CURRENT_WATERMARK(ts) AS wm FROM orders;
SELECT id, buyer FROM orders
WHERE CURRENT_WATERMARK(ts) IS NOT NULL AND ts <= CURRENT_WATERMARK(ts);
SELECT id, CASE WHEN ts > CURRENT_WATERMARK(ts) OR CURRENT_WATERMARK(ts) IS NULL
  THEN 'on time' ELSE 'late' END AS arrival
FROM orders WHERE id > 3;
