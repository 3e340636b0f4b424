-- Date and time functions: parts of a timestamp, DATE_FORMAT with Java
-- patterns, REPLACE.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, HOUR(ts + INTERVAL '17' HOUR) AS h, MINUTE(ts) AS m, SECOND(ts) AS s,
  EXTRACT(YEAR FROM ts) AS y, EXTRACT(MONTH FROM ts) AS mo, EXTRACT(DAY FROM ts) AS d,
  DATE_FORMAT(ts, 'yyyy-MM-dd') AS the_day, DATE_FORMAT(ts + INTERVAL '4' HOUR, 'HH:mm:ss.SSS') AS t,
  DATE_FORMAT(ts, 'yy/M/d H') AS short, REPLACE(buyer, 'a', 'A') AS shout
FROM orders WHERE id < 5;
