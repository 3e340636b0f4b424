-- Nexmark q8, monitor new users: people who opened an auction in the
-- 10 s tumbling window they registered in (two window aggregations joined
-- on their windows).
CREATE TABLE person (
  id BIGINT, name STRING, emailAddress STRING, creditCard STRING, city STRING,
  state STRING, dateTime TIMESTAMP(3), extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'person', 'events.num' = '100000');
CREATE TABLE auction (
  id BIGINT, itemName STRING, description STRING, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'auction', 'events.num' = '100000');

SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
