-- Types and functions where engines differ: DOUBLE arithmetic and its
-- printing, decimal division and AVG scales, casts, string functions.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, CAST(amount AS DOUBLE) / 3 AS third, amount / 4 AS quarter, CAST(id AS DOUBLE) * 1.5e0 AS scaled,
       CONCAT(buyer, '-', CAST(id AS STRING)) AS tag, TRIM('  x  ') AS trimmed, LOWER(UPPER(buyer)) AS same,
       CAST(ts AS DATE) AS dt, id % 4 AS modulo, -id AS negated, ABS(-amount) AS absolute
FROM orders
WHERE amount IS NOT NULL;
SELECT buyer, AVG(amount) AS avg_amount, AVG(CAST(id AS DOUBLE)) AS avg_id, SUM(CAST(amount AS DOUBLE)) AS total
FROM orders
GROUP BY buyer;
