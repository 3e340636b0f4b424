-- Nexmark q4, average price per category: each auction's closing price
-- (its highest bid within its lifetime), averaged per category. The inner
-- GROUP BY's results change as bids arrive, so the outer AVG retracts the
-- old maximum (-U) and adds the new one (+U).
CREATE TABLE auction (
  id BIGINT, itemName STRING, description STRING, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'auction', 'events.num' = '100000');
CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP(3), extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '100000');

SELECT Q.category, AVG(Q.final) AS average
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
