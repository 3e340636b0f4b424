-- compare: final rows
-- GROUP BYs over a regular join whose groups include a column equal to
-- the join key (Weir folds them into the join's operator; Flink plans an
-- aggregation after the join). Auction 3 has two rows of other
-- categories (two groups under one key), auction 4 two of one category
-- (one group, its bids joined with both rows), auction 6 a NULL
-- category; bids with a NULL price, a NULL auction, none in an
-- auction's lifetime, and one of an auction never seen. Which table's
-- rows come first decides the changes in between, so the rows the
-- changelogs leave are compared.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE auctions (
  id BIGINT, category BIGINT, opened TIMESTAMP(3), expires TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/auctions.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE offers (
  auction BIGINT, price BIGINT, ts TIMESTAMP(3), channel STRING,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/offers.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
-- Nexmark q4's shape: each auction's highest bid in its lifetime,
-- averaged per category.
SELECT Q.category, AVG(Q.final) AS average
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auctions A, offers B
  WHERE A.id = B.auction AND B.ts BETWEEN A.opened AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
-- Grouped by the other side's key column, with a WHERE and a HAVING.
SELECT B.auction, A.category, COUNT(*) AS n, SUM(B.price) AS total,
  MIN(B.channel) AS first_channel
FROM auctions A JOIN offers B ON A.id = B.auction
WHERE B.price > 10
GROUP BY B.auction, A.category
HAVING COUNT(*) > 1;
-- A distinct count and a computed result.
SELECT A.id, COUNT(DISTINCT B.channel) AS channels, MAX(B.ts) AS last_bid,
  SUM(B.price) * 2 AS doubled
FROM offers B JOIN auctions A ON B.auction = A.id
GROUP BY A.id;
-- Joined with each auction's bids per 10 s window: a bid waits only
-- until no window row to come can join it (Weir drops it then), and the
-- groups are in the join's operator with the bids' expiry.
SELECT W.auction, COUNT(*) AS n, MAX(B.price) AS top, SUM(W.c) AS windowed
FROM offers B JOIN (
  SELECT auction, window_end AS we, COUNT(*) AS c
  FROM TABLE(TUMBLE(TABLE offers, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY auction, window_start, window_end
) W ON B.auction = W.auction
WHERE B.ts BETWEEN W.we - INTERVAL '10' SECOND AND W.we
GROUP BY W.auction;
