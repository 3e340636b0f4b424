-- ORDER BY … LIMIT over a stream: the first rows by the order so far, a
-- row pushed out deleted (Flink's sort-limit, a Top-N without the rank);
-- LIMIT alone: the first rows that arrive, inserts only.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, buyer, amount FROM orders ORDER BY amount DESC LIMIT 3;
SELECT id, buyer FROM orders ORDER BY buyer, id DESC LIMIT 2;
SELECT id, buyer FROM orders LIMIT 4;
-- A Top-1 updates its one row (-U, +U) rather than deleting it, with or
-- without a partition.
SELECT id, buyer, amount FROM orders ORDER BY amount ASC, id DESC LIMIT 1;
SELECT id, buyer, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY amount DESC) AS rn FROM orders
) WHERE rn = 1;
SELECT buyer, COUNT(*) AS n FROM (SELECT * FROM orders LIMIT 6) GROUP BY buyer;
