-- Event-time temporal joins: each order joined with its buyer's tier as it
-- was at the order's time. `tiers` is a versioned table (a primary key and
-- an event-time attribute: each row a new version of its buyer's tier,
-- from its time on; carol's two versions at 08:00:10, the later one wins);
-- `last_tiers` is the same as a versioned view (each buyer's last row by
-- time). A version the ON's other conditions fail joins nothing (no older
-- version is tried), as in Flink. The join keeps the orders' time
-- attribute: a window aggregation can follow it. (The watermarks lag an
-- hour: which rows are late would otherwise depend on how the two files'
-- rows interleave.)
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE tiers (
  buyer STRING, tier STRING, since TIMESTAMP(3),
  PRIMARY KEY (buyer) NOT ENFORCED,
  WATERMARK FOR since AS since - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/tiers.csv', 'format' = 'csv');
CREATE TABLE tier_log (
  buyer STRING, tier STRING, since TIMESTAMP(3),
  WATERMARK FOR since AS since - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/tiers.csv', 'format' = 'csv');
CREATE VIEW last_tiers AS
SELECT buyer, tier, since FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY since DESC) AS rn FROM tier_log)
WHERE rn = 1;
SELECT o.id, o.buyer, o.ts, t.tier, t.since
FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t ON o.buyer = t.buyer;
SELECT o.id, t.tier, o.amount * 2 AS doubled
FROM orders AS o LEFT JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t
  ON o.buyer = t.buyer AND t.tier <> 'gold'
WHERE o.id <> 3;
SELECT o.id, t.tier, t.since
FROM orders AS o JOIN last_tiers FOR SYSTEM_TIME AS OF o.ts AS t ON t.buyer = o.buyer;
CREATE VIEW tiered AS
SELECT o.ts, t.tier
FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t ON o.buyer = t.buyer;
SELECT window_start, tier, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE tiered, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, tier;
SELECT t.tier, COUNT(*) AS n, SUM(o.amount) AS total
FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t ON o.buyer = t.buyer
GROUP BY t.tier;
-- An INT key equal to a BIGINT one, as Flink casts it.
CREATE TABLE order_notes (
  order_id INT, note STRING, written TIMESTAMP(3),
  PRIMARY KEY (order_id) NOT ENFORCED,
  WATERMARK FOR written AS written - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/order_notes.csv', 'format' = 'csv');
SELECT o.id, n.note
FROM orders AS o JOIN order_notes FOR SYSTEM_TIME AS OF o.ts AS n ON o.id = n.order_id;
