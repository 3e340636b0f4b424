-- GROUPING SETS, ROLLUP and CUBE: each set's groups apart (the keys it
-- leaves out NULL), GROUPING and GROUPING_ID telling the sets apart, in an
-- updating GROUP BY (with HAVING and a plain key beside a ROLLUP) and in a
-- TUMBLE window aggregation.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE VIEW o AS SELECT id, buyer, amount, ts, MOD(id, 2) AS parity FROM orders;
SELECT buyer, parity, COUNT(*) AS n, SUM(amount) AS total, GROUPING(buyer) AS gb, GROUPING(buyer, parity) AS g2
FROM o GROUP BY ROLLUP(buyer, parity);
SELECT buyer, parity, COUNT(*) AS n FROM o GROUP BY CUBE(buyer, parity) HAVING COUNT(*) > 2;
SELECT parity, buyer, MAX(amount) AS m FROM o WHERE id > 2 GROUP BY GROUPING SETS ((parity), (buyer), ());
SELECT window_start, buyer, COUNT(*) AS n, GROUPING_ID(buyer) AS g
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, ROLLUP(buyer);
SELECT parity, buyer, COUNT(*) AS n FROM o GROUP BY parity, ROLLUP(buyer);
