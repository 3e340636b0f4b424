-- A window aggregation's rows joined on their window with the same
-- aggregation's per-window MAX or MIN of one of its columns (Nexmark q5's
-- shape, other forms of it). Weir computes those that keep each window's
-- rows at the extremum in one operator keyed by window (the first three
-- statements); the fourth's `>=` with MIN keeps every row, so it stays a
-- window join. NULL sums (carol's NULL amount) are never an extremum;
-- late orders (08:00:05, 08:00:14, 08:00:09) are dropped by the windows.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT L.most, L.s, C.buyer, C.total, C.e
FROM (
  SELECT MIN(M.total) AS most, M.s, M.e
  FROM (
    SELECT SUM(amount) AS total, window_start AS s, window_end AS e
    FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
    GROUP BY buyer, window_start, window_end
  ) M
  GROUP BY M.e, M.s
) L
JOIN (
  SELECT buyer, window_end AS e, SUM(amount) AS total, window_start AS s
  FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
  GROUP BY buyer, window_start, window_end
) C
ON L.most = C.total AND L.e = C.e AND C.s = L.s AND C.buyer <> 'bob';
SELECT C.buyer, C.n, T.e
FROM (
  SELECT buyer, COUNT(*) AS n, window_start, window_end AS e
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY buyer, window_start, window_end
) C
JOIN (
  SELECT window_end AS e, MAX(X.n) AS most, window_start
  FROM (
    SELECT COUNT(*) AS n, window_start, window_end
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY buyer, window_start, window_end
  ) X
  GROUP BY window_start, window_end
) T
ON C.window_start = T.window_start AND C.e = T.e AND T.most <= C.n;
SELECT C.buyer, C.top, C.s
FROM (
  SELECT buyer, MAX(amount) AS top, window_start AS s, window_end AS e
  FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
  GROUP BY buyer, window_start, window_end
) C
JOIN (
  SELECT MAX(M.top) AS best, M.s, M.e
  FROM (
    SELECT MAX(amount) AS top, window_start AS s, window_end AS e
    FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
    GROUP BY buyer, window_start, window_end
  ) M
  GROUP BY M.s, M.e
) T
ON C.s = T.s AND C.e = T.e AND C.top = T.best;
SELECT C.buyer, C.n, C.s
FROM (
  SELECT buyer, COUNT(*) AS n, window_start AS s, window_end AS e
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY buyer, window_start, window_end
) C
JOIN (
  SELECT MIN(M.n) AS fewest, M.s, M.e
  FROM (
    SELECT COUNT(*) AS n, window_start AS s, window_end AS e
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY buyer, window_start, window_end
  ) M
  GROUP BY M.s, M.e
) T
ON C.s = T.s AND C.e = T.e AND C.n >= T.fewest;
