-- Aggregates with FILTER (WHERE …): only the rows the condition is TRUE
-- for (NULL is not TRUE) count.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, COUNT(*) FILTER (WHERE amount > 4) AS big, COUNT(*) AS n,
  SUM(amount) FILTER (WHERE id > 2) AS later, MAX(id) FILTER (WHERE amount < 4) AS last_small,
  COUNT(DISTINCT buyer) FILTER (WHERE amount IS NULL) AS unpriced
FROM orders
GROUP BY buyer;
