-- Nexmark q7's shape: the bids joined with each 10 s window's highest
-- price, within the window's span (its end included). A regular join in
-- Flink; a window's end is above the watermark in every window row still
-- to come, so the bids no window to come can join are dropped from the
-- join's state, and the joined rows stay the same. Bids late for their
-- window (08:00:05 and 08:00:11: the window aggregation drops them) still
-- join the windows already emitted; the bid of 08:00:20.000 joins the
-- window ending then and the one starting then, whose row comes with a
-- watermark that jumps past both (08:00:43). The second statement has
-- the windows on the left and the bounds written the other way round.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE bids (
  id BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/bids.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT B.id, B.price, B.ts, B1.ts AS window_end
FROM bids B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS ts
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.ts BETWEEN B1.ts - INTERVAL '10' SECOND AND B1.ts;
SELECT W.window_end, W.top, B.bidder
FROM (
  SELECT window_end, MAX(price) AS top
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) W
JOIN bids B ON W.top = B.price AND W.window_end >= B.ts
WHERE W.window_end - INTERVAL '10' SECOND <= B.ts;
