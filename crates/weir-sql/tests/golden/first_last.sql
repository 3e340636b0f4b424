-- FIRST_VALUE and LAST_VALUE: the first and last values that are not
-- NULL, in arrival order, in a GROUP BY (a changelog), in a TUMBLE window
-- (late rows dropped), over a GROUP BY's updating rows (a retracted value
-- leaves the list, the earliest equal one first) and in an OVER window.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, FIRST_VALUE(amount) AS f, LAST_VALUE(amount) AS l, FIRST_VALUE(id) AS fi,
  LAST_VALUE(buyer) AS lb
FROM orders GROUP BY buyer;
SELECT window_start, FIRST_VALUE(buyer) AS f, LAST_VALUE(amount) AS l
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
SELECT k, FIRST_VALUE(f) AS ff, LAST_VALUE(f) AS lf FROM (
  SELECT buyer, MAX(amount) AS f, MOD(COUNT(*), 2) AS k FROM orders GROUP BY buyer
) GROUP BY k;
SELECT id, FIRST_VALUE(amount) OVER w AS f, LAST_VALUE(amount) OVER w AS l FROM orders
WINDOW w AS (PARTITION BY buyer ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW);
