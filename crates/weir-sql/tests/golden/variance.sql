-- VAR_POP, VAR_SAMP (VARIANCE), STDDEV_POP and STDDEV_SAMP (STDDEV): of
-- a DECIMAL, at the scale Flink gives (at least 6, rounded half up); of
-- an integer, the integer part of the exact value; of a DOUBLE, in
-- floating point. NULL without values and, for a sample, with one. In a
-- GROUP BY (a changelog), a HOP window (slices merged), over updating
-- rows (values taken out again) and over VALUES.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, STDDEV_POP(amount) AS sp, STDDEV_SAMP(amount) AS ss, VAR_POP(amount) AS vp,
  VAR_SAMP(amount) AS vs
FROM orders GROUP BY buyer;
SELECT buyer, STDDEV_POP(id) AS sp, STDDEV_SAMP(id) AS ss, VAR_POP(id) AS vp, VARIANCE(id) AS vs,
  STDDEV_POP(CAST(id AS DOUBLE)) AS spd, VAR_SAMP(CAST(id AS INT) * 1000) AS vi
FROM orders GROUP BY buyer;
SELECT window_start, window_end, VAR_POP(amount) AS v, STDDEV(id) AS s,
  STDDEV_SAMP(amount * amount) AS s2
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
SELECT k, VAR_SAMP(f) AS v, STDDEV_POP(f) AS s FROM (
  SELECT buyer, MAX(amount) AS f, MOD(COUNT(*), 2) AS k FROM orders GROUP BY buyer
) GROUP BY k;
SELECT VAR_SAMP(x) AS vs, VAR_POP(x) AS vp FROM (VALUES (CAST(0 AS BIGINT)), (CAST(3 AS BIGINT))) AS t (x);
SELECT VAR_SAMP(x) AS vs, VAR_POP(x) AS vp, STDDEV_POP(x) AS sp FROM (VALUES (CAST(-7 AS BIGINT)), (CAST(3 AS BIGINT)), (CAST(4 AS BIGINT))) AS t (x);
SELECT VAR_SAMP(x) AS vs, VAR_POP(x) AS vp, STDDEV_POP(x) AS sp FROM (VALUES (CAST(1.5 AS DECIMAL(5, 1))), (CAST(2.25 AS DECIMAL(5, 1))), (CAST(7 AS DECIMAL(5, 1)))) AS t (x);
SELECT VAR_SAMP(x) AS vs, VAR_POP(x) AS vp, STDDEV_SAMP(x) AS ss FROM (VALUES (CAST(1.123456789 AS DECIMAL(12, 9))), (CAST(2.000000001 AS DECIMAL(12, 9))), (CAST(-3.5 AS DECIMAL(12, 9)))) AS t (x);
