-- Window joins: two window TVFs' rows joined on their windows (and a
-- key), each window joined when the watermark passes its end; an outer
-- side's unmatched rows padded with NULLs; insert-only. Window columns
-- renamed by a window aggregation's SELECT are still its windows. (The watermarks lag an
-- hour: which rows are late would otherwise depend on how the two files'
-- rows interleave.)
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE payments (
  order_id BIGINT, paid TIMESTAMP(3), kind STRING,
  WATERMARK FOR paid AS paid - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/payments.csv', 'format' = 'csv');
SELECT L.id, L.buyer, R.paid, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))) L
JOIN (SELECT * FROM TABLE(TUMBLE(TABLE payments, DESCRIPTOR(paid), INTERVAL '10' SECOND))) R
ON L.id = R.order_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
SELECT P.buyer, P.n, Q.payments
FROM (
  SELECT buyer, window_start AS s, window_end AS e, COUNT(*) AS n
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY buyer, window_start, window_end
) P LEFT JOIN (
  SELECT kind, window_start AS s, window_end AS e, COUNT(*) AS payments
  FROM TABLE(TUMBLE(TABLE payments, DESCRIPTOR(paid), INTERVAL '10' SECOND))
  GROUP BY kind, window_start, window_end
) Q ON P.s = Q.s AND P.e = Q.e AND Q.kind = 'cash';
