-- An unbounded GROUP BY of variances. Flink plans VAR_* and STDDEV_* as
-- SUMs and a COUNT, the variance computed after the aggregation, so a
-- value that changes the sums emits the result again (-U, +U) even where
-- the variance comes out the same (an integer column's, truncated); a
-- NULL changes no sum and emits nothing.
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT buyer, STDDEV_POP(id) AS sd FROM orders GROUP BY buyer;
SELECT buyer, COUNT(*) AS n, VAR_SAMP(amount) AS v FROM orders WHERE id < 9 GROUP BY buyer;
