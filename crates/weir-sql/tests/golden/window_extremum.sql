-- Tables joined with their own windows' MIN or MAX on the aggregated
-- value (Nexmark q7's shape, other forms of it). Weir computes those
-- whose conditions keep a row within its window's span in one operator
-- keyed by window (the first, third, fourth and fifth statements, the
-- fifth's bounds through both window columns); the second
-- statement's bound reaches into the window before, so it stays a
-- regular join. Late bids (08:00:05, 08:00:11) still join the windows
-- already emitted; the bid of 08:00:20.000 is in a window's span and at
-- the end of the one before.
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE bids (
  id BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/bids.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT B.id, B.price, M.window_start, M.low
FROM bids B, (
  SELECT window_start, MIN(price) AS low
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_end, window_start
) M
WHERE B.price = M.low AND B.ts >= M.window_start
  AND B.ts < M.window_start + INTERVAL '10' SECOND AND B.bidder <> 6;
SELECT B.id, M.t
FROM bids B
JOIN (
  SELECT MAX(price) AS top, window_end AS t
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) M ON B.price = M.top
WHERE B.ts BETWEEN M.t - INTERVAL '20' SECOND AND M.t;
SELECT M.wt, B.id, B.price
FROM (
  SELECT window_time AS wt, MAX(price) AS top
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end, window_time
) M
JOIN bids B ON B.price = M.top AND B.ts > M.wt - INTERVAL '10' SECOND AND B.ts <= M.wt;
SELECT B.id, B.price, M.e
FROM bids B
JOIN (
  SELECT window_end AS e, MAX(price) AS top
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND))
  GROUP BY window_start, window_end
) M ON B.price = M.top AND B.ts BETWEEN M.e - INTERVAL '5' SECOND AND M.e;
SELECT B.id, M.top, M.s
FROM (
  SELECT MAX(price) AS top, window_start AS s, window_end AS e
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) M, bids B
WHERE B.price = M.top AND B.ts >= M.s AND B.ts < M.e AND B.bidder <> 9;
