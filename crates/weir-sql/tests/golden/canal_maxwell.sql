-- Canal's and Maxwell's change events as changelog sources (formats
-- 'canal-json' and 'maxwell-json'): several rows in one Canal event, a
-- table created (CREATE) that holds none, updates whose old row is the new
-- one with the changed fields as they were (`old`), deletes; a GROUP BY
-- retracting as rows change.
CREATE TABLE canal_tiers (buyer STRING, tier STRING, since TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/tier_changes_canal.json', 'format' = 'canal-json');
CREATE TABLE maxwell_tiers (buyer STRING, tier STRING, since TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/tier_changes_maxwell.json', 'format' = 'maxwell-json');
SELECT * FROM canal_tiers;
SELECT * FROM maxwell_tiers;
SELECT tier, COUNT(*) AS n FROM canal_tiers GROUP BY tier;
