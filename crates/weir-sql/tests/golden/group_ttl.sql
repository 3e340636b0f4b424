-- An unbounded GROUP BY with a state time-to-live: a row that leaves its
-- group's result as it was (MAX not beaten) emits the
-- result again (-U, +U), as Flink does so that the operators after it
-- see the key touched; without a time-to-live (group_changelog.sql) it
-- emits nothing.
SET 'table.exec.state.ttl' = '1 h';
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, MAX(amount) AS biggest
FROM orders
WHERE id < 10
GROUP BY buyer;
