-- Aggregations and joins over updating inputs. The inner GROUP BY's
-- results change as orders arrive; each change is a -U of the old result
-- (retracted from the outer aggregation's accumulators) and a +U of the
-- new one. A group whose rows are all retracted is deleted (-D).
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE buyers (
  name STRING, city STRING, id BIGINT
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/buyers.csv', 'format' = 'csv');
-- How many buyers have placed n orders, for each n.
SELECT n, COUNT(*) AS buyers, MAX(buyer) AS last_buyer
FROM (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer)
GROUP BY n;
-- Retracting MIN, MAX, SUM, AVG and COUNT(DISTINCT) over per-buyer totals.
SELECT MIN(total) AS smallest, MAX(total) AS largest, SUM(total) AS everything,
  AVG(total) AS mean, COUNT(DISTINCT n) AS counts, COUNT(*) AS buyers
FROM (SELECT buyer, SUM(amount) AS total, COUNT(*) AS n FROM orders GROUP BY buyer);
