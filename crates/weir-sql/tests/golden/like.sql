-- CREATE TABLE … LIKE: a table made from another's columns, computed
-- columns, watermark and options, with its own options overwriting the
-- base's (Flink's default, INCLUDING ALL OVERWRITING OPTIONS) and
-- columns of its own after the base's; or without the base's computed
-- columns and watermark; or with a watermark of its own instead.
CREATE TABLE base (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  doubled AS amount * 2,
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/nowhere.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE orders (shout AS UPPER(buyer)) WITH ('path' = '${DIR}/orders.csv') LIKE base;
CREATE TABLE plain WITH ('path' = '${DIR}/orders.csv')
LIKE base (EXCLUDING GENERATED EXCLUDING WATERMARKS);
CREATE TABLE later (WATERMARK FOR ts AS ts - INTERVAL '2' HOUR)
WITH ('path' = '${DIR}/orders.csv') LIKE base (OVERWRITING WATERMARKS);
SELECT * FROM orders;
SELECT * FROM plain;
SELECT window_start, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE later, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
