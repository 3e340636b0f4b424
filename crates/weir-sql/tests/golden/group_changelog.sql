-- An unbounded GROUP BY: each group's first result is +I, each change a
-- -U of the old and a +U of the new result; an unchanged result (MAX not
-- beaten) emits nothing. HAVING filters each change row on its own.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, MAX(amount) AS biggest
FROM orders
WHERE id < 9
GROUP BY buyer;
SELECT UPPER(buyer) AS who, COUNT(*) AS n, SUM(amount) AS total
FROM orders
GROUP BY UPPER(buyer)
HAVING COUNT(*) >= 2;
