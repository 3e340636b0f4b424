-- Nexmark q2, selection: bids on every 123rd auction.
CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP(3), extra STRING,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '100000');

SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
