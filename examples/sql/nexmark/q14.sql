-- Nexmark q14, calculation: euro prices between 1 M and 50 M, the time of
-- day of each bid and a user function over its extra field. count_char is
-- the Nexmark suite's user function, built into Weir under the identifier
-- the suite creates it with.
CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP(3), extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '100000');
CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';

SELECT
  auction,
  bidder,
  0.908 * price AS price,
  CASE
    WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
    WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bidTimeType,
  dateTime,
  extra,
  count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
