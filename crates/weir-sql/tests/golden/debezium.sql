-- Debezium's change events as a changelog source (format 'debezium-json'):
-- creates and snapshot reads (+I), updates (-U, +U), deletes (-D), fields
-- the table does not have ignored; the events of a file with their schema
-- ('debezium-json.schema-include'); a GROUP BY retracting as rows change;
-- and the same changes as a versioned table (a primary key and a
-- watermark) in an event-time temporal join, where a delete holds its
-- row's time (bob's tier is gone from 08:00:03, the time of the row it
-- deletes) and an update's -U is not a version. (The watermarks lag an
-- hour: which rows are late would otherwise depend on how the two files'
-- rows interleave.)
CREATE TABLE orders (
  id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/orders.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
CREATE TABLE tier_changes (buyer STRING, tier STRING, since TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/tier_changes.json', 'format' = 'debezium-json');
CREATE TABLE tier_events (buyer STRING, tier STRING, since TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/tier_changes_schema.json',
  'format' = 'debezium-json', 'debezium-json.schema-include' = 'true');
CREATE TABLE tiers (
  buyer STRING, tier STRING, since TIMESTAMP(3),
  PRIMARY KEY (buyer) NOT ENFORCED,
  WATERMARK FOR since AS since - INTERVAL '1' HOUR
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/tier_changes.json', 'format' = 'debezium-json');
SELECT * FROM tier_changes;
SELECT buyer, tier FROM tier_events;
SELECT tier, COUNT(*) AS n FROM tier_changes GROUP BY tier;
SELECT o.id, o.buyer, t.tier, t.since
FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t ON o.buyer = t.buyer;
