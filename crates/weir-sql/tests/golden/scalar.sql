-- Projection and filter with Flink's scalar functions and NULLs.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, UPPER(buyer) AS who, CHAR_LENGTH(buyer) AS len, amount * 2 AS twice, amount + 1 AS plus,
       CASE WHEN amount > 10 THEN 'big' WHEN amount IS NULL THEN 'none' ELSE 'small' END AS size,
       COALESCE(amount, 0) AS zeroed, IF(id % 2 = 0, 'even', 'odd') AS parity,
       CAST(id AS STRING) || '-' || buyer AS tag, ts - INTERVAL '1' SECOND AS before,
       SUBSTRING(buyer FROM 2 FOR 3) AS part, id / 3 AS third, buyer LIKE '%o%' AS has_o
FROM orders
WHERE id BETWEEN 2 AND 9 AND buyer IN ('alice', 'bob', 'carol');
