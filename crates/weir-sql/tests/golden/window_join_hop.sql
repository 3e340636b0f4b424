-- Window joins of hopping and cumulating windows (a row in several
-- windows joins in each): a TVF's rows joined as they are, on a key or
-- on the windows alone, and window aggregations joined with an outer
-- side.
-- (The watermarks lag an hour: which rows are late would otherwise
-- depend on how the two files' rows interleave.)
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING,
  WATERMARK FOR paid AS paid - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
SELECT L.id, R.kind, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) L
JOIN (SELECT * FROM TABLE(HOP(TABLE payments, DESCRIPTOR(paid), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) R
ON L.id = R.order_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
SELECT L.id, R.order_id, L.window_end
FROM (SELECT * FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) L
JOIN (SELECT * FROM TABLE(CUMULATE(TABLE payments, DESCRIPTOR(paid), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) R
ON L.window_start = R.window_start AND L.window_end = R.window_end
WHERE R.kind = 'cash';
SELECT P.buyer, P.s, P.e, P.n, Q.paid
FROM (
  SELECT buyer, window_start AS s, window_end AS e, COUNT(*) AS n
  FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
  GROUP BY buyer, window_start, window_end
) P LEFT JOIN (
  SELECT order_id, window_start AS s, window_end AS e, MAX(paid) AS paid
  FROM TABLE(CUMULATE(TABLE payments, DESCRIPTOR(paid), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
  GROUP BY order_id, window_start, window_end
) Q ON P.n = Q.order_id AND P.s = Q.s AND P.e = Q.e;
