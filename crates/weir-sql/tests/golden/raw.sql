-- The 'raw' format: each line of a file as the table's one STRING column,
-- untouched (commas, spaces, the text "null" and all).
CREATE TABLE lines (line STRING)
WITH ('connector' = 'filesystem', 'path' = '${DIR}/texts.csv', 'format' = 'raw');
SELECT line, CHAR_LENGTH(line) AS n FROM lines;
