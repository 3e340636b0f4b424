-- ROW_NUMBER() OVER … kept by its number. Window Top-N: each window's two
-- biggest orders, when the watermark passes the window's end (late rows
-- dropped); window deduplication: each buyer's first order of a window.
-- Top-N without windows: each buyer's two biggest orders so far, as a
-- changelog (with the rank shown, every rank a new row pushes down is
-- updated; without it, the row pushed out is deleted). Deduplication: each
-- buyer's first and last order by event time.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT window_start, window_end, id, amount, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY amount DESC) AS rn
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
) WHERE rn <= 2;
SELECT window_start, buyer, id FROM (
  SELECT window_start, window_end, buyer, id,
    ROW_NUMBER() OVER (PARTITION BY window_start, window_end, buyer ORDER BY ts ASC) AS rownum
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
) WHERE rownum = 1;
SELECT * FROM (
  SELECT buyer, id, amount, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY amount DESC) AS rk
  FROM orders
) WHERE rk <= 2;
SELECT buyer, id, amount FROM (
  SELECT buyer, id, amount, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY amount DESC) AS rk
  FROM orders
) WHERE rk <= 2;
SELECT buyer, id FROM (
  SELECT buyer, id, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY ts ASC) AS rk FROM orders
) WHERE rk = 1;
SELECT buyer, id FROM (
  SELECT buyer, id, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY ts DESC) AS rk FROM orders
) WHERE rk = 1;
