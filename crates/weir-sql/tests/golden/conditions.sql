-- Conditions with SQL's NULLs: AND, OR and NOT over NULL columns, the
-- time of day of a timestamp and a DECIMAL product compared with
-- constants (at the edges of the ranges), in WHERE, CASE, IF, NULLIF,
-- boolean columns and HAVING.
CREATE TABLE readings (
  id BIGINT, n INT, price BIGINT, label STRING, ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/readings.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id,
  CASE
    WHEN HOUR(ts) >= 8 AND HOUR(ts) <= 18 THEN 'day'
    WHEN HOUR(ts) <= 6 OR HOUR(ts) >= 20 THEN 'night'
    ELSE 'other'
  END AS part,
  0.908 * price AS euros,
  0.908 * price > 1000 AND 0.908 * price < 5000 AS mid,
  0.908 * price >= 1000.108 AS from_edge,
  price * 0.5 <> 1000.5 AS not_half,
  NOT (n > 2) AS small,
  n > 2 OR label = 'x' AS either,
  n > 2 AND label = 'x' AS big_x,
  IF(MINUTE(ts) = 0 AND SECOND(ts) = 0, 'sharp', 'off') AS sharp,
  HOUR(ts) + 1 > 19 AS late,
  NOT (HOUR(ts) < 20) AS evening,
  NULLIF(label, 'a') AS not_a,
  NULLIF(n, 3) + 1 AS not_three
FROM readings
WHERE NOT (id = 3) AND (label IS NULL OR label <> 'skip' OR n IS NULL);
-- Groups kept by a HAVING with NULLs (a group's MAX(n) is NULL when all
-- its n are).
SELECT label, COUNT(*) AS num, MAX(n) AS most
FROM readings
GROUP BY label
HAVING NOT (COUNT(*) > 1) OR MAX(n) > 4;
