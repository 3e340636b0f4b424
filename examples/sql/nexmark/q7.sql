-- Nexmark q7, highest bid: the bids with the highest price of each 10 s
-- tumbling window (a window aggregation joined back with the bids).
CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP(3), extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '100000');

SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS dateTime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;
