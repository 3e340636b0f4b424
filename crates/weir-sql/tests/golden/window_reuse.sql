-- A window aggregation a statement computes twice (the same window TVF,
-- WHERE and GROUP BY, the same aggregates) runs once, and each SELECT
-- list reads its rows; one with other aggregates runs apart. Nexmark
-- q5's shape: each window's buyers with the most orders.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT C.buyer, C.n, C.s
FROM (
  SELECT buyer, COUNT(*) AS n, window_start AS s, window_end AS e
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  WHERE id <> 5
  GROUP BY buyer, window_start, window_end
) C
JOIN (
  SELECT MAX(M.n) AS most, M.s, M.e
  FROM (
    SELECT COUNT(*) AS n, window_start AS s, window_end AS e
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    WHERE id <> 5
    GROUP BY buyer, window_start, window_end
  ) M
  GROUP BY M.s, M.e
) T
ON C.s = T.s AND C.e = T.e AND C.n >= T.most;
SELECT buyer, window_start, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY buyer, window_start, window_end
UNION ALL
SELECT UPPER(buyer), window_start, SUM(id) AS n
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY buyer, window_start, window_end
UNION ALL
SELECT buyer || '!', window_end, COUNT(*) + 100 AS n
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY buyer, window_start, window_end
HAVING COUNT(*) > 1;
