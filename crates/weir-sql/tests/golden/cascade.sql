-- A window aggregation over a window aggregation's windows (Flink's
-- cascading window aggregation): grouped by the first one's window_start
-- and window_end, renamed, it emits one row per window when the
-- watermark passes the window's end, never an update.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT MAX(n) AS maxn, COUNT(*) AS buyers, starttime, endtime FROM (
  SELECT buyer, COUNT(*) AS n, window_start AS starttime, window_end AS endtime
  FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
  GROUP BY buyer, window_start, window_end
) GROUP BY starttime, endtime;
