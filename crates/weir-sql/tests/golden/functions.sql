-- Flink's built-in math, text and time functions, NULLs included (row 4
-- is all NULL; row 3's last field is empty text).
CREATE TABLE m (
  id BIGINT, s STRING, d DECIMAL(10, 2), n INT, ts TIMESTAMP(3), t STRING
) WITH ('connector' = 'filesystem', 'path' = '${DIR}/texts.csv', 'format' = 'csv',
  'csv.null-literal' = 'null');
SELECT id, ROUND(d, 1), ROUND(d), ROUND(d, -1), ROUND(d, 3), ROUND(CAST(d AS DOUBLE) / 3, 2), ROUND(id * 7, -1),
  ROUND(n, 1), ROUND(CAST(n AS DOUBLE) / 8, 1), ROUND(d * 1.005, 2), ROUND(2.675e0, 2), ROUND(-2.5e0, 0), ROUND(-12.5, 0),
  TRUNCATE(d, 1), TRUNCATE(d), TRUNCATE(CAST(d AS DOUBLE) * 3, 1),
  FLOOR(d), CEIL(d), FLOOR(-d), CEILING(CAST(d AS DOUBLE)), FLOOR(id), SIGN(d), SIGN(n), SIGN(CAST(n AS DOUBLE))
FROM m;
SELECT id, POWER(n, 2), POWER(d, 0.5), SQRT(d), EXP(n), LN(d), LOG10(d), LOG2(d), LOG(d), LOG(2, d), PI(), E(),
  GREATEST(n, 1, id), GREATEST(s, t), LEAST(ts, TIMESTAMP '2020-03-01 00:00:00'), MOD(n, 4), ABS(n)
FROM m;
-- Flink fails on a NULL DECIMAL in LEAST or GREATEST; Weir gives NULL.
SELECT id, LEAST(d, 1), GREATEST(d, n) FROM m WHERE d IS NOT NULL;
SELECT id, LPAD(s, 8, '*'), RPAD(s, 3, 'xy'), RPAD(s, 14, 'xy'), LPAD(s, 0, '*'), LPAD(s, 4, ''), LTRIM(s), RTRIM(s),
  POSITION('b' IN t), POSITION('' IN s), LOCATE('b', t), LOCATE('-', t, 3), LOCATE('', s),
  INITCAP(s), INITCAP('hello wORLD_x 9ab'), REPEAT(t, 2), REPEAT(s, -1),
  CONCAT_WS('/', s, t, 'z'), CONCAT_WS('/', t), CONCAT_WS(CAST(NULL AS STRING), 'a')
FROM m;
SELECT id, SPLIT_INDEX(t, '-', 1), SPLIT_INDEX(t, '|', 0), SPLIT_INDEX(t, '-', 5), SPLIT_INDEX('a--b', '-', 1), SPLIT_INDEX('a--b', '-', 2),
  REGEXP_REPLACE(t, '[a-c]', 'Q'), REGEXP_REPLACE(s, '([a-z]+) ([a-z]+)', '$2, $1'), REGEXP_EXTRACT(s, '([a-z]+) ([a-z]+)', 2),
  REGEXP_EXTRACT(t, '[a-z]+'), REGEXP_EXTRACT(t, '([a-z])-([a-z])', 3), REGEXP(s, '^[A-Z]'),
  SUBSTR(s, 2), SUBSTR(s, 2, 3), SUBSTR(s, -3), SUBSTR(s, -20, 3), SUBSTRING(s FROM -3), SUBSTRING(s FROM 0 FOR 2), SUBSTRING(s FROM -3 FOR 2),
  LEFT(s, 3), RIGHT(s, 3), REVERSE(s), ASCII(s), CHR(n + 70), CHR(321), CHR(-1), CHR(255),
  TRIM(BOTH 'a' FROM s), TRIM(BOTH 'ab' FROM 'abcbax'), TRIM(LEADING ' ' FROM s), TRIM(TRAILING 'x' FROM 'xaxx')
FROM m;
SELECT id, TIMESTAMPADD(MINUTE, n, ts), TIMESTAMPADD(MONTH, 1, ts), TIMESTAMPADD(YEAR, -1, ts), TIMESTAMPADD(DAY, n, CAST(ts AS DATE)),
  TIMESTAMPADD(HOUR, 1, CAST(ts AS DATE)), TIMESTAMPADD(WEEK, 1, ts), TIMESTAMPADD(QUARTER, 1, DATE '2020-11-30'),
  TIMESTAMPDIFF(SECOND, ts, TIMESTAMP '2020-04-15 08:00:00'), TIMESTAMPDIFF(DAY, ts, TIMESTAMP '2020-04-15 08:00:00'),
  TIMESTAMPDIFF(MONTH, ts, TIMESTAMP '2020-04-15 08:00:00'), TIMESTAMPDIFF(HOUR, CAST(ts AS DATE), DATE '2020-04-16'),
  TIMESTAMPDIFF(YEAR, ts, TIMESTAMP '2020-02-28 00:00:00'), TIMESTAMPDIFF(QUARTER, ts, TIMESTAMP '2020-12-28 00:00:00'),
  TIMESTAMPDIFF(WEEK, ts, TIMESTAMP '2020-12-28 00:00:00'), TIMESTAMPDIFF(MINUTE, ts, TIMESTAMP '2020-12-28 00:00:00'),
  TIMESTAMPDIFF(MONTH, TIMESTAMP '2020-04-15 09:00:00', TIMESTAMP '2020-03-15 08:00:00')
FROM m
-- Before 1970 Flink's dates are a day late (1969-12-31 12:30 casts to the
-- DATE 1970-01-01, is a Thursday, in the first quarter of 1970); Weir's
-- are the calendar's.
WHERE ts >= TIMESTAMP '1970-01-01 00:00:00' OR ts IS NULL;
SELECT id, FLOOR(ts TO MINUTE), CEIL(ts TO HOUR), FLOOR(ts TO DAY), FLOOR(ts TO MONTH), CEIL(ts TO SECOND), FLOOR(ts TO YEAR),
  FLOOR(ts TO WEEK), CEIL(ts TO MINUTE), FLOOR(ts TO QUARTER), CEIL(ts TO DAY), FLOOR(CAST(ts AS DATE) TO MONTH),
  CAST(FLOOR(CAST(ts AS TIMESTAMP_LTZ(3)) TO HOUR) AS STRING),
  DAYOFWEEK(ts), DAYOFYEAR(ts), WEEK(ts), QUARTER(ts), EXTRACT(DOW FROM ts), EXTRACT(QUARTER FROM ts),
  EXTRACT(WEEK FROM ts), EXTRACT(DOY FROM ts), EXTRACT(MILLISECOND FROM ts), DAYOFWEEK(CAST(ts AS DATE))
FROM m
WHERE ts >= TIMESTAMP '1970-01-01 00:00:00' OR ts IS NULL;
-- Before 1970, to units of a day or less, Flink's are the calendar's too.
SELECT id, FLOOR(ts TO DAY), CEIL(ts TO HOUR), TIMESTAMPADD(MINUTE, n, ts), TIMESTAMPDIFF(MINUTE, ts, TIMESTAMP '1970-01-01 00:00:00')
FROM m;
SELECT id, TO_TIMESTAMP('2020-04-15 08:00:01'), TO_TIMESTAMP('15/04/2020 08', 'dd/MM/yyyy HH'), TO_TIMESTAMP('bad'),
  TO_TIMESTAMP('2020-04-15'), TO_TIMESTAMP('2020-04-15 08:00:01.5'), TO_TIMESTAMP('2020-04-15T08:00:01'),
  TO_TIMESTAMP('2020-04-15 8:0:1'), TO_TIMESTAMP('2020-04-15 08:00:01.123456'), TO_TIMESTAMP(' 2020-04-15 08:00:01'),
  TO_TIMESTAMP('2020-04-15 08:00', 'yyyy-MM-dd HH:mm'), TO_TIMESTAMP('2020-04-15 08:00:01', 'yyyy-MM-dd HH:mm'),
  TO_DATE('2020-04-15'), TO_DATE('20200415', 'yyyyMMdd'), TO_DATE('2020-4-5'), TO_DATE('x'), TO_DATE('2020-02-30'),
  UNIX_TIMESTAMP('2020-04-15 08:00:01'), UNIX_TIMESTAMP('2020/04/15', 'yyyy/MM/dd'), UNIX_TIMESTAMP('nope'),
  FROM_UNIXTIME(1586937601), FROM_UNIXTIME(id * 86400, 'yyyy-MM-dd'), FROM_UNIXTIME(-1), FROM_UNIXTIME(0, 'yyyyMMdd HH'),
  TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')), UNIX_TIMESTAMP(CAST(ts AS STRING))
FROM m;
SELECT id, n IS DISTINCT FROM 0, n IS NOT DISTINCT FROM CAST(NULL AS INT), s IS NOT DISTINCT FROM t, IFNULL(s, 'none'),
  JSON_VALUE('{"a": {"b": [1, "x"]}, "c": null}', '$.a.b[1]'), JSON_VALUE(t, '$.x'), JSON_VALUE('{"a": 1.50}', '$.a'),
  JSON_VALUE('{"a": true}', '$.a'), JSON_VALUE('{"a": {"b": 1}}', '$.a'), JSON_VALUE('{"a": [1,2]}', '$.a[0]'),
  JSON_VALUE('{"c": null}', '$.c'), JSON_VALUE('bad', '$.c'), JSON_VALUE('{"a": "x\"y"}', '$.a'), JSON_VALUE('{"a b": 2}', '$[''a b'']'),
  JSON_VALUE('{"a": 12345678901234567890}', '$.a'), JSON_VALUE('{"a": 1e3}', '$.a'),
  JSON_VALUE(CONCAT('{"who": "', s, '", "n": ', CAST(n AS STRING), '}'), '$.who'),
  JSON_VALUE(CONCAT('{"who": "', s, '", "n": ', CAST(n AS STRING), '}'), '$.n'),
  JSON_EXISTS('{"a": 1}', '$.a'), JSON_EXISTS('{"a": 1}', '$.b'),
  MD5(s), SHA256(s), SHA2(s, 224), SHA512(t), TO_BASE64(s), FROM_BASE64(TO_BASE64(s)), FROM_BASE64('QUJD')
FROM m;
