-- Mini-batch: a GROUP BY folds the rows of a bundle into one change per
-- group (+I, -U/+U, -D or nothing). Which rows share a bundle is up to
-- each engine's batching, so the rows the changelogs leave are compared.
-- compare: final rows
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '3';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT UPPER(buyer) AS who, COUNT(*) AS n, SUM(amount) AS total, MAX(amount) AS biggest
FROM orders
GROUP BY UPPER(buyer)
HAVING COUNT(*) >= 2;
-- Over updating inputs: the inner results' -U/+U rows are retracted from
-- and added to the outer groups, which may be left without rows (-D).
SELECT n, COUNT(*) AS buyers, MAX(buyer) AS last_buyer
FROM (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer)
GROUP BY n;
SELECT MIN(total) AS smallest, MAX(total) AS largest, SUM(total) AS everything,
  AVG(total) AS mean, COUNT(DISTINCT n) AS counts, COUNT(*) AS buyers
FROM (SELECT buyer, SUM(amount) AS total, COUNT(*) AS n FROM orders GROUP BY buyer);
