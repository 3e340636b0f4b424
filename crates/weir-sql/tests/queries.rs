//! Scripts run end to end: CSV files in, changelog tables out.

use std::path::PathBuf;

use weir_sql::SqlError;

mod support;

fn csv(name: &str, content: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-sql-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.csv"));
    std::fs::write(&path, content).expect("write csv");
    path
}

fn run(script: &str) -> Result<String, SqlError> {
    support::run_with(script, &[])
}

/// Runs `script`, which must fail with an error that says `says`.
fn fails_saying(script: &str, says: &str) {
    match run(script) {
        Ok(out) => panic!("ran, printing {out}; expected an error saying {says}"),
        Err(e) => assert!(e.to_string().contains(says), "{e}"),
    }
}

const ORDERS: &str = "1,alice,12.50,2020-04-15 08:00:01\n\
                      2,bob,3.00,2020-04-15 08:00:04\n\
                      3,alice,40.25,2020-04-15 08:00:07\n\
                      4,carol,,2020-04-15 08:00:09\n";

fn orders_ddl(path: &std::path::Path) -> String {
    format!(
        "CREATE TABLE orders (
           id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
           big AS amount > 10,
           WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
         ) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = '');",
        path.display()
    )
}

/// The calc moves copied columns out of the input row: a column copied
/// twice, and read by an expression beside, must keep its value in each.
#[test]
fn a_column_copied_twice_and_computed_on_keeps_its_value() -> Result<(), SqlError> {
    let path = csv("copied_twice", ORDERS);
    let out = run(&format!(
        "{}
         SELECT buyer, id, buyer AS again, UPPER(buyer) AS up, id + 1 AS next, buyer
         FROM orders WHERE id < 3;",
        orders_ddl(&path)
    ))?;
    let expected = "\
[INFO] Execute statement succeeded.
+----+-------+----+-------+-------+------+-------+
| op | buyer | id | again |    up | next | buyer |
+----+-------+----+-------+-------+------+-------+
| +I | alice |  1 | alice | ALICE |    2 | alice |
| +I |   bob |  2 |   bob |   BOB |    3 |   bob |
+----+-------+----+-------+-------+------+-------+
Received a total of 2 rows
";
    assert_eq!(out, expected);
    Ok(())
}

/// A SELECT list narrower than its input is built in the input row's
/// buffer: a computed item must read its column before a copied column is
/// swapped over it.
#[test]
fn a_narrower_select_list_computes_before_it_moves() -> Result<(), SqlError> {
    let path = csv("in_place", ORDERS);
    let out = run(&format!(
        "{}
         SELECT id, amount * 2 AS twice, ts FROM orders WHERE id <> 2;",
        orders_ddl(&path)
    ))?;
    let expected = "\
[INFO] Execute statement succeeded.
+----+----+-------+-------------------------+
| op | id | twice |                      ts |
+----+----+-------+-------------------------+
| +I |  1 | 25.00 | 2020-04-15 08:00:01.000 |
| +I |  3 | 80.50 | 2020-04-15 08:00:07.000 |
| +I |  4 |  NULL | 2020-04-15 08:00:09.000 |
+----+----+-------+-------------------------+
Received a total of 3 rows
";
    assert_eq!(out, expected);
    Ok(())
}

/// A wide SELECT list (more columns than are held aside) that keeps its
/// input's order is built by swapping columns into place.
#[test]
fn a_wide_select_list_is_built_by_swaps() -> Result<(), SqlError> {
    let path = csv(
        "wide",
        "0,1,2,3,4,5,6,7,8,9\n10,11,12,13,14,15,16,17,18,19\n",
    );
    let columns: Vec<String> = (0..10).map(|i| format!("c{i} BIGINT")).collect();
    let out = run(&format!(
        "CREATE TABLE t ({}) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         SELECT c0, c1, c2, c3, c4, c5, c6, c7, c9, c8 * 10 AS n FROM t;",
        columns.join(", "),
        path.display()
    ))?;
    let expected = "\
[INFO] Execute statement succeeded.
+----+----+----+----+----+----+----+----+----+----+-----+
| op | c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7 | c9 |   n |
+----+----+----+----+----+----+----+----+----+----+-----+
| +I |  0 |  1 |  2 |  3 |  4 |  5 |  6 |  7 |  9 |  80 |
| +I | 10 | 11 | 12 | 13 | 14 | 15 | 16 | 17 | 19 | 180 |
+----+----+----+----+----+----+----+----+----+----+-----+
Received a total of 2 rows
";
    assert_eq!(out, expected);
    Ok(())
}

/// A computed column of a column and a constant is written straight into
/// its slot when nothing else needs the input column there (the second
/// query, constant first), and not when a copied column moves out of
/// that slot (the first: the scan's row is `id, buyer, amount`, and
/// `buyer` moves from slot 1 to 0).
#[test]
fn arithmetic_of_a_column_and_a_constant_lands_in_its_slot() -> Result<(), SqlError> {
    let path = csv("in_place", ORDERS);
    let out = run(&format!(
        "{}
         SELECT buyer, amount * 2 AS doubled FROM orders WHERE id < 5;
         SELECT id, buyer, 2 * amount AS doubled FROM orders;",
        orders_ddl(&path)
    ))?;
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| +I")).collect();
    assert_eq!(
        rows,
        vec![
            "| +I | alice |   25.00 |",
            "| +I |   bob |    6.00 |",
            "| +I | alice |   80.50 |",
            "| +I | carol |    NULL |",
            "| +I |  1 | alice |   25.00 |",
            "| +I |  2 |   bob |    6.00 |",
            "| +I |  3 | alice |   80.50 |",
            "| +I |  4 | carol |    NULL |",
        ],
        "{out}"
    );
    Ok(())
}

#[test]
fn projection_and_filter_over_csv() -> Result<(), SqlError> {
    let path = csv("projection", ORDERS);
    let out = run(&format!(
        "{}
         SELECT id, UPPER(buyer) AS who, amount * 2 AS twice, big
         FROM orders WHERE amount IS NOT NULL AND buyer <> 'bob';",
        orders_ddl(&path)
    ))?;
    let expected = "\
[INFO] Execute statement succeeded.
+----+----+-------+-------+------+
| op | id |   who | twice |  big |
+----+----+-------+-------+------+
| +I |  1 | ALICE | 25.00 | TRUE |
| +I |  3 | ALICE | 80.50 | TRUE |
+----+----+-------+-------+------+
Received a total of 2 rows
";
    assert_eq!(out, expected);
    Ok(())
}

#[test]
fn views_and_explain() -> Result<(), SqlError> {
    let path = csv("views", ORDERS);
    let out = run(&format!(
        "{}
         CREATE VIEW small AS SELECT id, buyer FROM orders WHERE amount < 10;
         EXPLAIN SELECT * FROM small;
         SELECT * FROM small;",
        orders_ddl(&path)
    ))?;
    assert!(out.contains("== Weir Plan ==\nTableSourceScan: orders [filesystem]\nWatermarkAssigner: rowtime=ts, watermark=ts - INTERVAL '2' SECOND\nCalc: where amount < 10\nCalc: select id, buyer\n"), "{out}");
    assert!(out.contains("| +I |  2 |   bob |\n"), "{out}");
    assert!(out.contains("Received a total of 1 row\n"), "{out}");
    Ok(())
}

#[test]
fn mistakes_are_named_before_any_job_runs() {
    let path = csv("mistakes", ORDERS);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    assert!(err("SELECT nope FROM orders;")
        .contains("column 'nope' not found; the input has id, buyer, amount, ts, big"));
    assert!(err("SELECT id FROM missing;")
        .contains("table or view 'missing' not found (known: orders)"));
    assert!(err("SELECT DISTINCT * FROM orders;")
        .contains("not supported: SELECT DISTINCT * (name the columns)"));
    assert!(err("SELECT DISTINCT COUNT(*) FROM orders;")
        .contains("not supported: SELECT DISTINCT with GROUP BY or aggregates"));
    let e = err("CREATE TABLE o2 (a INT) WITH ('connector' = 'filesystem', 'path' = 'x', 'format' = 'csv', 'pth' = 'y');\nSELECT * FROM o2;");
    assert!(
        e.contains("unsupported options for connector 'filesystem': pth"),
        "{e}"
    );
    let e = err("CREATE TABLE o3 (a INT) WITH ('connector' = 'filesystem', 'format' = 'csv');\nSELECT * FROM o3;");
    assert!(e.contains("the option 'path' is missing"), "{e}");
    let e = err("CREATE TABLE orders (a INT) WITH ('connector' = 'print');");
    assert!(e.contains("a table or view 'orders' exists already"), "{e}");
}

#[test]
fn a_built_in_called_wrongly_is_named_at_its_call() {
    let path = csv("builtins", ORDERS);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT ROUND(buyer, 1) FROM orders;");
    assert!(
        e.contains(
            "ROUND's argument buyer is STRING where a number is expected (at line 7, column 14)"
        ),
        "{e}"
    );
    let e = err("SELECT ROUND(amount, id) FROM orders;");
    assert!(
        e.contains("ROUND's argument id must be an integer constant"),
        "{e}"
    );
    let e = err("SELECT LPAD(buyer, 3) FROM orders;");
    assert!(e.contains("LPAD takes 3 argument(s), not 2"), "{e}");
    let e = err("SELECT TIMESTAMPADD(FORTNIGHT, 1, ts) FROM orders;");
    assert!(
        e.contains("TIMESTAMPADD's first argument is a unit: SECOND"),
        "{e}"
    );
    let e = err("SELECT TIMESTAMPDIFF(DAY, ts, buyer) FROM orders;");
    assert!(
        e.contains("is STRING where a DATE or TIMESTAMP is expected"),
        "{e}"
    );
    let e = err("SELECT REGEXP_EXTRACT(buyer, 'a(') FROM orders;");
    assert!(
        e.contains("REGEXP_EXTRACT: 'a(' is not a regular expression"),
        "{e}"
    );
    let e = err("SELECT TO_TIMESTAMP(buyer, 'yyyy-MM-dd QQ') FROM orders;");
    assert!(e.contains("the pattern letter 'Q'"), "{e}");
    let e = err("SELECT JSON_VALUE(buyer, '$.a[*]') FROM orders;");
    assert!(e.contains("JSON_VALUE: '$.a[*]' is not a JSON path"), "{e}");
    let e = err("SELECT SHA2(buyer, 100) FROM orders;");
    assert!(e.contains("SHA2's length is 224, 256, 384 or 512"), "{e}");
    let e = err("SELECT id IS DISTINCT FROM buyer FROM orders;");
    assert!(e.contains("cannot compare BIGINT with STRING"), "{e}");
    let e = err("SELECT OVERLAY(buyer PLACING 'x' FROM 'a') FROM orders;");
    assert!(
        e.contains("'a' is STRING where an integer is expected"),
        "{e}"
    );
    let e = err("SELECT ELT(buyer, 1) FROM orders;");
    assert!(
        e.contains("ELT's argument buyer is STRING where an integer is expected"),
        "{e}"
    );
    let e = err("SELECT FLOOR(ts TO DECADE) FROM orders;");
    assert!(e.contains("not supported: FLOOR and CEIL to DECADE"), "{e}");
}

/// The clock's functions give the time the query runs at.
#[test]
fn the_clock_functions_read_the_time_the_query_runs_at() -> Result<(), SqlError> {
    let path = csv("clock", ORDERS);
    let seconds = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    };
    let before = seconds();
    let out = run(&format!(
        "{}\nSELECT id, UNIX_TIMESTAMP() AS now, CURRENT_DATE = CAST(CURRENT_TIMESTAMP AS DATE) AS today FROM orders;",
        orders_ddl(&path)
    ))?;
    let after = seconds();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("| +I"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    for row in rows {
        let now: i64 = row[3].parse().expect("a number");
        assert!(
            (before..=after).contains(&now),
            "{now} not in {before}..={after}: {out}"
        );
        assert_eq!(row[4], "TRUE", "{out}");
    }
    Ok(())
}

#[test]
fn a_bad_line_fails_the_job_and_says_which() {
    let path = csv(
        "bad",
        "1,alice,12.50,2020-04-15 08:00:01\n2,bob,lots,2020-04-15 08:00:04\n",
    );
    // Only the columns a query reads are parsed (as Flink reads CSV with
    // projection pushdown): this query reads the bad one.
    let e = run(&format!(
        "{}\nSELECT id, amount FROM orders;",
        orders_ddl(&path)
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("'lots' is not a valid DECIMAL(10, 2)"), "{e}");
    assert!(e.contains("2,bob,lots"), "{e}");
    // This one does not read it.
    let out = run(&format!(
        "{}\nSELECT id, buyer FROM orders;",
        orders_ddl(&path)
    ))
    .expect("the bad column is not read");
    assert!(out.contains("| +I |  2 |   bob |"), "{out}");
}

/// A row without a rowtime has no event time: Flink's watermark assigner
/// fails the job on it ("RowTime field should not be null"), before any
/// `WHERE` could drop it, and so does Weir's.
#[test]
fn a_null_rowtime_fails_the_job_and_names_the_column() {
    let path = csv(
        "null_rowtime",
        "1,alice,12.50,2020-04-15 08:00:01\n2,bob,3.00,\n3,carol,1.00,2020-04-15 08:00:02\n",
    );
    for query in [
        "SELECT id, buyer FROM orders;",
        "SELECT id FROM orders WHERE id <> 2;",
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), \
         INTERVAL '10' SECOND)) GROUP BY window_start, window_end;",
    ] {
        let e = run(&format!("{}\n{query}", orders_ddl(&path)))
            .expect_err("a NULL rowtime fails the job")
            .to_string();
        assert!(
            e.contains("table 'orders': the rowtime column 'ts' is NULL"),
            "{query}: {e}"
        );
    }
}

/// A `datagen` scan with a `WHERE` and a watermark reads each row's
/// filtered and time columns first, and makes only the rows it keeps:
/// those rows are whole, their computed columns included, and windows over
/// them count what the `WHERE` kept.
#[test]
fn a_filtered_datagen_scan_makes_whole_the_rows_it_keeps() -> Result<(), SqlError> {
    let ddl = "CREATE TABLE g (
                 id BIGINT, k AS MOD(id, 10), ts AS TO_TIMESTAMP_LTZ(id, 0),
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
               ) WITH ('connector' = 'datagen', 'rows-per-second' = '100000',
                 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '40');";
    let lines = support::changelog(&format!(
        "{ddl}\nSELECT id, k, ts FROM g WHERE MOD(id, 7) = 0;"
    ))?;
    // The changelog's lines come sorted.
    let mut expected: Vec<String> = [7, 14, 21, 28, 35]
        .iter()
        .map(|id| format!("+I[{id}, {}, 1970-01-01 00:00:{id:02}.000]", id % 10))
        .collect();
    expected.sort();
    assert_eq!(lines, expected);
    let lines = support::changelog(&format!(
        "{ddl}\nSELECT window_start, COUNT(*), SUM(k) FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts),
           INTERVAL '10' SECOND)) WHERE MOD(id, 7) = 0 GROUP BY window_start, window_end;"
    ))?;
    assert_eq!(
        lines,
        [
            "+I[1970-01-01 00:00:00.000, 1, 7]",
            "+I[1970-01-01 00:00:10.000, 1, 4]",
            "+I[1970-01-01 00:00:20.000, 2, 9]",
            "+I[1970-01-01 00:00:30.000, 1, 5]",
        ]
    );
    Ok(())
}

/// A computed column that cannot be computed for a row fails the job and
/// names the column, as Flink's source fails on `/ by zero`: it is never
/// made a NULL. Each way a source computes its columns is tried: the
/// general expression, integer arithmetic of a column and a constant, a
/// stand-in row probed for a `WHERE`, Nexmark's events and a file's rows.
#[test]
fn a_computed_column_that_fails_fails_the_job_and_names_it() {
    let datagen = |columns: &str, query: &str| {
        run(&format!(
            "CREATE TABLE g (id BIGINT, {columns}) WITH ('connector' = 'datagen',
               'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '5');
             {query}"
        ))
        .expect_err("the job fails")
        .to_string()
    };
    let e = datagen("q AS 10 / (id - 3)", "SELECT id, q FROM g;");
    assert!(
        e.contains("computed column 'q' of table 'g': division by zero: 10 / 0"),
        "{e}"
    );
    let e = datagen("m AS MOD(id, 0)", "SELECT id, m FROM g;");
    assert!(
        e.contains("computed column 'm' of table 'g': division by zero: 1 % 0"),
        "{e}"
    );
    let e = datagen(
        "ts AS TO_TIMESTAMP_LTZ(id, 3), q AS 10 / (id - 3), WATERMARK FOR ts AS ts",
        "SELECT id FROM g WHERE q > 0;",
    );
    assert!(
        e.contains("computed column 'q' of table 'g': division by zero: 10 / 0"),
        "{e}"
    );
    let e = run(
        "CREATE TABLE bid (auction BIGINT, price BIGINT, r AS price / (price - price))
           WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '100');
         SELECT auction, r FROM bid;",
    )
    .expect_err("the job fails")
    .to_string();
    assert!(
        e.contains("computed column 'r' of table 'bid': division by zero"),
        "{e}"
    );
    let path = csv("computed_fails", "1,0\n");
    let e = run(&format!(
        "CREATE TABLE f (a INT, b INT, r AS a / b) WITH ('connector' = 'filesystem',
           'path' = '{}', 'format' = 'csv');
         SELECT r FROM f;",
        path.display()
    ))
    .expect_err("the job fails")
    .to_string();
    assert!(
        e.contains("computed column 'r' of table 'f': division by zero: 1 / 0"),
        "{e}"
    );
}

/// Orders with one late row: after 08:00:12 the watermark is 08:00:10, so
/// the row of 08:00:05 is late for the window [08:00:00, 08:00:10), which
/// fired when the watermark passed 08:00:09.999.
const WINDOWED: &str = "1,alice,12.50,2020-04-15 08:00:01\n\
                        2,bob,3.00,2020-04-15 08:00:04\n\
                        3,alice,40.25,2020-04-15 08:00:07\n\
                        4,carol,,2020-04-15 08:00:09\n\
                        5,alice,1.00,2020-04-15 08:00:12\n\
                        6,bob,2.00,2020-04-15 08:00:05\n\
                        7,bob,5.00,2020-04-15 08:00:21\n";

#[test]
fn tumbling_window_aggregation_drops_late_rows() -> Result<(), SqlError> {
    let path = csv("tumble", WINDOWED);
    let out = run(&format!(
        "SET 'pipeline.auto-watermark-interval' = '0';
         {}
         SELECT window_start, window_end, buyer, SUM(amount) AS total, COUNT(*) AS n,
                COUNT(amount) AS priced, MAX(id) + 1 AS next_id
         FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end, buyer;",
        orders_ddl(&path)
    ))?;
    let mut rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| +I")).collect();
    rows.sort_unstable();
    let mut expected = vec![
            "| +I | 2020-04-15 08:00:00.000 | 2020-04-15 08:00:10.000 | alice | 52.75 | 2 |      2 |       4 |",
            "| +I | 2020-04-15 08:00:00.000 | 2020-04-15 08:00:10.000 |   bob |  3.00 | 1 |      1 |       3 |",
            "| +I | 2020-04-15 08:00:00.000 | 2020-04-15 08:00:10.000 | carol |  NULL | 1 |      0 |       5 |",
            "| +I | 2020-04-15 08:00:10.000 | 2020-04-15 08:00:20.000 | alice |  1.00 | 1 |      1 |       6 |",
            "| +I | 2020-04-15 08:00:20.000 | 2020-04-15 08:00:30.000 |   bob |  5.00 | 1 |      1 |       8 |",
    ];
    expected.sort_unstable();
    assert_eq!(rows, expected, "{out}");
    Ok(())
}

/// The watermark is the table's, of every row it has, before any `WHERE`
/// (as in Flink, where it is assigned in the scan): alice's row of
/// 08:00:12 moves it to 08:00:10 though the view drops that row, so bob's
/// row of 08:00:05 is late.
#[test]
fn rows_a_where_drops_still_move_the_watermark() -> Result<(), SqlError> {
    let path = csv("filtered_watermark", WINDOWED);
    let out = run(&format!(
        "SET 'pipeline.auto-watermark-interval' = '0';
         {}
         CREATE VIEW others AS SELECT id, buyer, amount, ts FROM orders WHERE buyer <> 'alice';
         SELECT window_start, buyer, COUNT(*) AS n
         FROM TABLE(TUMBLE(TABLE others, DESCRIPTOR(ts), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end, buyer;",
        orders_ddl(&path)
    ))?;
    let mut rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| +I")).collect();
    rows.sort_unstable();
    assert_eq!(
        rows,
        vec![
            "| +I | 2020-04-15 08:00:00.000 |   bob | 1 |",
            "| +I | 2020-04-15 08:00:00.000 | carol | 1 |",
            "| +I | 2020-04-15 08:00:20.000 |   bob | 1 |",
        ],
        "{out}"
    );
    Ok(())
}

#[test]
fn hopping_windows_and_having() -> Result<(), SqlError> {
    let path = csv("hop", WINDOWED);
    let out = run(&format!(
        "SET 'pipeline.auto-watermark-interval' = '0';
         {}
         SELECT window_end, COUNT(DISTINCT buyer) AS buyers
         FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
         WHERE id <> 3
         GROUP BY window_start, window_end
         HAVING COUNT(*) > 1;",
        orders_ddl(&path)
    ))?;
    let mut rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| +I")).collect();
    rows.sort_unstable();
    // Windows of 10 s every 5 s; id 3 filtered; bob's late 08:00:05 row
    // is late for [08:00:00, 08:00:10) but in time for [08:00:05, 08:00:15).
    assert_eq!(
        rows,
        vec![
            "| +I | 2020-04-15 08:00:05.000 |      2 |",
            "| +I | 2020-04-15 08:00:10.000 |      3 |",
            "| +I | 2020-04-15 08:00:15.000 |      3 |",
        ],
        "{out}"
    );
    Ok(())
}

#[test]
fn window_mistakes_are_named() {
    let path = csv("window-mistakes", WINDOWED);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT buyer, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end;");
    assert!(
        e.contains("column 'buyer' is neither grouped nor aggregated"),
        "{e}"
    );
    let e = err("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY buyer;");
    assert!(
        e.contains("must GROUP BY window_start and window_end"),
        "{e}"
    );
    let e = err("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(id), INTERVAL '10' SECOND)) GROUP BY window_start, window_end;");
    assert!(e.contains("'id' is not a time attribute"), "{e}");
    let e = err("SELECT * FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '3' SECOND, INTERVAL '10' SECOND));");
    assert!(
        e.contains("CUMULATE's size (10000 ms) must be a multiple of its step (3000 ms)"),
        "{e}"
    );
    let e = err("SELECT * FROM TABLE(SESSION(TABLE orders PARTITION BY buyer, DESCRIPTOR(ts), INTERVAL '1' SECOND));");
    assert!(
        e.contains("not supported: SESSION windows outside a window aggregation"),
        "{e}"
    );
    let e = err("SELECT id, COUNT(*) FROM TABLE(SESSION(TABLE orders PARTITION BY buyer, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY id, window_start, window_end;");
    assert!(
        e.contains(
            "SESSION windows whose PARTITION BY (buyer) differs from the GROUP BY keys (id)"
        ),
        "{e}"
    );
    let e = err("SELECT * FROM TABLE(TUMBLE(TABLE orders PARTITION BY buyer, DESCRIPTOR(ts), INTERVAL '1' SECOND));");
    assert!(e.contains("TUMBLE takes no PARTITION BY"), "{e}");
    // A mistake after a PARTITION BY is still placed where it is.
    let query = "SELECT buyer, COUNT(*) FROM TABLE(SESSION(TABLE orders PARTITION BY buyer, DESCRIPTOR(ts), INTERVAL '1' SECOND)) WHERE nope GROUP BY buyer, window_start, window_end;";
    let e = err(query);
    let column = query.find("nope").expect("nope") + 1;
    let line = ddl.lines().count() + 1;
    assert!(
        e.contains(&format!(
            "column 'nope' not found; the input has id, buyer, amount, ts, big (at line {line}, column {column})"
        )),
        "{e}"
    );
    let e = err("SELECT buyer, id, COUNT(*) FROM orders GROUP BY buyer;");
    assert!(
        e.contains("column 'id' is neither grouped nor aggregated"),
        "{e}"
    );
    let e =
        err("SELECT buyer, COUNT(*) FROM orders WHERE ts > CURRENT_WATERMARK(ts) GROUP BY buyer;");
    assert!(
        e.contains("not supported: CURRENT_WATERMARK in an aggregation"),
        "{e}"
    );
    let e = err("SELECT buyer, COUNT(buyer) FROM orders GROUP BY ROLLUP (buyer);");
    assert!(
        e.contains("not supported: an aggregate of the grouping key buyer, which a grouping set leaves out"),
        "{e}"
    );
    let e = err("SELECT UPPER(buyer), COUNT(*) FROM orders GROUP BY CUBE (UPPER(buyer));");
    assert!(
        e.contains("not supported: the grouping key UPPER(buyer)"),
        "{e}"
    );
    let e = err("SELECT buyer, GROUPING(id) FROM orders GROUP BY ROLLUP (buyer);");
    assert!(
        e.contains("column 'id' is neither grouped nor aggregated"),
        "{e}"
    );
    for (query, says) in [
        (
            "SELECT id, LAG(id) OVER (PARTITION BY buyer ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM orders;",
            "LAG takes no ROWS or RANGE frame in its window",
        ),
        (
            "SELECT id, LEAD(id) OVER (ORDER BY ts) FROM orders;",
            "not supported: LEAD in a streaming OVER window",
        ),
        (
            "SELECT buyer, LAG(id) FROM orders GROUP BY buyer;",
            "LAG needs an OVER window",
        ),
        (
            "SELECT id, LAG(id, 1, 'x') OVER (ORDER BY ts) FROM orders;",
            "LAG's default is STRING, its value BIGINT",
        ),
    ] {
        let e = err(query);
        assert!(e.contains(says), "{query}: {e}");
    }
    let e = err("SELECT CURRENT_WATERMARK(id) FROM orders;");
    assert!(
        e.contains("CURRENT_WATERMARK takes a time attribute, not BIGINT"),
        "{e}"
    );
    let e = err("SELECT LAST_VALUE(id) FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY window_start, window_end;");
    assert!(
        e.contains("not supported: LAST_VALUE in a HOP window"),
        "{e}"
    );
}

/// `examples/sql/order_report.sql` prints the windows `order_report`
/// prints for the sample orders, except what SQL cannot say: bob's window
/// firing again for the order within the allowed lateness (o7), and the
/// late side output (o9).
#[test]
fn the_order_report_in_sql_matches_the_datastream_report() -> Result<(), SqlError> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script =
        std::fs::read_to_string(root.join("examples/sql/order_report.sql")).expect("script");
    let data = root.join("examples/data/orders.csv");
    let script = script.replace(
        "'examples/data/orders.csv'",
        &format!("'{}'", data.display()),
    );
    let out = run(&script)?;
    let mut rows: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("| +I"))
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
        .collect();
    rows.sort_unstable();
    // order_report's lines: "user alice [2024-05-01 10:00:00, 10:00:10):
    // 3 orders, total 35.50 (o1, o3, o5)", and so on.
    let mut expected = vec![
        "|+I|alice|2024-05-01 10:00:00.000|2024-05-01 10:00:10.000|3|35.50|o1, o3, o5|",
        "|+I|bob|2024-05-01 10:00:00.000|2024-05-01 10:00:10.000|1|8.00|o2|",
        "|+I|carol|2024-05-01 10:00:10.000|2024-05-01 10:00:20.000|1|40.00|o6|",
        "|+I|alice|2024-05-01 10:00:10.000|2024-05-01 10:00:20.000|1|7.75|o8|",
        "|+I|bob|2024-05-01 10:00:10.000|2024-05-01 10:00:20.000|1|5.25|o4|",
        "|+I|bob|2024-05-01 10:00:20.000|2024-05-01 10:00:30.000|1|9.99|o10|",
    ];
    expected.sort_unstable();
    assert_eq!(rows, expected, "{out}");
    Ok(())
}

/// `examples/sql/currency_conversion.sql` prints the rows Flink 2.3
/// prints for it: each order at its currency's rate when it was placed,
/// over a table of Debezium rate changes.
#[test]
fn the_currency_conversion_example_prices_each_order_at_its_time() -> Result<(), SqlError> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = std::fs::read_to_string(root.join("examples/sql/currency_conversion.sql"))
        .expect("script")
        .replace(
            "'examples/data/",
            &format!("'{}/examples/data/", root.display()),
        );
    let mut out = support::changelog(&script)?;
    out.sort();
    assert_eq!(
        out,
        [
            "+I[o1, 2.00, EUR, 1.1400, 2.280000, 2020-04-15 09:00:02.000]",
            "+I[o2, 50.00, JPY, 0.0092, 0.460000, 2020-04-15 09:00:04.000]",
            "+I[o3, 12.00, EUR, 1.1500, 13.800000, 2020-04-15 09:00:11.000]",
            "+I[o4, 1.00, GBP, NULL, NULL, 2020-04-15 09:00:06.000]",
            "+I[o5, 100.00, JPY, 0.0091, 0.910000, 2020-04-15 09:00:25.000]",
            "+I[o6, 3.00, USD, NULL, NULL, 2020-04-15 09:00:07.000]",
        ]
    );
    Ok(())
}

/// An aggregation whose results go straight into a `blackhole` or
/// `upsert-kafka` table makes no `-U` rows (Flink's planner gives those
/// sinks `+I`/`+U` alone); into `print`, or through a `HAVING`, it makes
/// them; an aggregation whose results another one reads keeps making them.
#[test]
fn only_a_sink_that_reads_no_update_before_goes_without() -> Result<(), SqlError> {
    let path = csv("update_before", ORDERS);
    let ddl = orders_ddl(&path);
    let sinks = "CREATE TABLE hole (buyer STRING, n BIGINT) WITH ('connector' = 'blackhole');
         CREATE TABLE shown (buyer STRING, n BIGINT) WITH ('connector' = 'print');
         CREATE TABLE upserted (buyer STRING, n BIGINT, PRIMARY KEY (buyer) NOT ENFORCED)
           WITH ('connector' = 'upsert-kafka', 'topic' = 't',
                 'properties.bootstrap.servers' = '127.0.0.1:9', 'key.format' = 'json',
                 'value.format' = 'json');";
    let plan = |insert: &str| run(&format!("{ddl}\n{sinks}\nEXPLAIN {insert};"));
    const LEFT_OUT: &str = "GroupAggregate: no -U rows (the sink of 'hole' reads none)";
    let counts = "SELECT buyer, COUNT(*) FROM orders GROUP BY buyer";
    let out = plan(&format!("INSERT INTO hole {counts}"))?;
    assert!(out.contains(LEFT_OUT), "{out}");
    let out = plan(&format!("INSERT INTO shown {counts}"))?;
    assert!(!out.contains("no -U rows"), "{out}");
    // An upsert-kafka sink writes each key's new row over the old one.
    let out = plan(&format!("INSERT INTO upserted {counts}"))?;
    assert!(
        out.contains("no -U rows (the sink of 'upserted' reads none)"),
        "{out}"
    );
    let out = plan(&format!("INSERT INTO hole {counts} HAVING COUNT(*) > 1"))?;
    assert!(!out.contains("no -U rows"), "{out}");
    // The outer aggregation's are left out, the inner one's made.
    let nested = "INSERT INTO hole SELECT CAST(n AS STRING), COUNT(*)
         FROM (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer) GROUP BY n";
    let out = plan(nested)?;
    assert_eq!(out.matches("no -U rows").count(), 1, "{out}");
    Ok(())
}

#[test]
fn settings_are_checked() -> Result<(), SqlError> {
    let path = csv("settings", ORDERS);
    let ddl = orders_ddl(&path);
    let out = run(&format!(
        "SET 'table.exec.state.tll' = '1 h';\n{ddl}\nSET 'table.exec.state.ttl' = '1 h';
         EXPLAIN SELECT buyer, COUNT(*) FROM orders GROUP BY buyer;"
    ))?;
    assert!(
        out.contains("[WARNING] 'table.exec.state.tll' is not a SQL option Weir knows"),
        "{out}"
    );
    assert!(out.contains("GroupAggregate: group by [buyer], 1 aggregate(s), changelog +I/-U/+U/-D, state TTL 3600000 ms"), "{out}");
    let e = run(&format!("SET 'table.exec.state.ttl' = 'soon';\n{ddl}\nSELECT buyer, COUNT(*) FROM orders GROUP BY buyer;"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'table.exec.state.ttl'"), "{e}");
    let e = run(&format!(
        "SET 'sql-client.execution.result-mode' = 'table';\n{ddl}\nSELECT id FROM orders;"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("'table' is not a result mode"), "{e}");
    Ok(())
}

/// A row that leaves its group's result as it was (a lower amount under
/// `MAX`) emits nothing, unless a state time-to-live is set: then the
/// result is emitted again (`-U`/`+U`), as Flink's `GroupAggFunction` does
/// so that the operators after it see the key touched.
#[test]
fn an_unchanged_group_result_is_emitted_again_only_with_a_state_ttl() -> Result<(), SqlError> {
    let path = csv(
        "unchanged-results",
        "1,alice,12.50,2020-04-15 08:00:01\n\
         2,alice,5.00,2020-04-15 08:00:02\n\
         3,alice,40.25,2020-04-15 08:00:03\n",
    );
    let ddl = orders_ddl(&path);
    let query = "SELECT buyer, MAX(amount) AS top FROM orders GROUP BY buyer;";
    // The changelog's lines come sorted.
    let lines = support::changelog(&format!("{ddl}\n{query}"))?;
    assert_eq!(
        lines,
        ["+I[alice, 12.50]", "+U[alice, 40.25]", "-U[alice, 12.50]"]
    );
    let ttl = "SET 'table.exec.state.ttl' = '1 h';";
    let lines = support::changelog(&format!("{ttl}\n{ddl}\n{query}"))?;
    assert_eq!(
        lines,
        [
            "+I[alice, 12.50]",
            "+U[alice, 12.50]",
            "+U[alice, 40.25]",
            "-U[alice, 12.50]",
            "-U[alice, 12.50]"
        ]
    );
    Ok(())
}

/// Mini-batch needs a latency and a size, as in Flink; on, a `GROUP BY`
/// folds the rows that arrive together into one change per group.
#[test]
fn mini_batch_folds_a_groups_rows_and_needs_its_settings() -> Result<(), SqlError> {
    let path = csv("mini_batch", ORDERS);
    let ddl = orders_ddl(&path);
    let query = "SELECT buyer, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY buyer;";
    for (sets, missing) in [
        ("", MINI_BATCH_LATENCY),
        (
            "SET 'table.exec.mini-batch.allow-latency' = '0 ms';",
            MINI_BATCH_LATENCY,
        ),
        (
            "SET 'table.exec.mini-batch.allow-latency' = '2 s';",
            MINI_BATCH_SIZE,
        ),
        (
            "SET 'table.exec.mini-batch.allow-latency' = '2 s';\n\
             SET 'table.exec.mini-batch.size' = '-1';",
            MINI_BATCH_SIZE,
        ),
    ] {
        let e = run(&format!(
            "SET 'table.exec.mini-batch.enabled' = 'true';\n{sets}\n{ddl}\n{query}"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains(&format!("'{missing}'")), "{sets}: {e}");
    }
    let on = "SET 'table.exec.mini-batch.enabled' = 'true';
        SET 'table.exec.mini-batch.allow-latency' = '2 s';
        SET 'table.exec.mini-batch.size' = '5000';";
    let plan = run(&format!("{on}\n{ddl}\nEXPLAIN {query}"))?;
    assert!(plan.contains("mini-batch of up to 5000 rows"), "{plan}");
    // 300 rows of three buyers: row by row, 597 changelog rows; folded,
    // as many as the batches the rows arrive in (one, here) times three.
    let buyers = ["alice", "bob", "carol"];
    let rows: String = (0..300)
        .map(|i| format!("{i},{},{i}.00,2020-04-15 08:00:01\n", buyers[i % 3]))
        .collect();
    let ddl = orders_ddl(&csv("mini_batch_rows", &rows));
    let lines = support::changelog(&format!("{on}\n{ddl}\n{query}"))?;
    assert!(
        lines.len() < 30,
        "{} changelog rows: {lines:?}",
        lines.len()
    );
    let expected: Vec<String> = (0..3)
        .map(|k| format!("[{}, 100, {}.00]", buyers[k], 14850 + 100 * k))
        .collect();
    assert_eq!(support::materialize(&lines), expected);
    Ok(())
}

#[test]
fn a_filter_condition_must_be_boolean() {
    let path = csv("filter_type", ORDERS);
    let ddl = orders_ddl(&path);
    let e = run(&format!(
        "{ddl}\nSELECT buyer, COUNT(*) FILTER (WHERE amount) FROM orders GROUP BY buyer;"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("FILTER needs a BOOLEAN condition, not DECIMAL(10, 2)"),
        "{e}"
    );
}

/// A constant `DATE_FORMAT` pattern is read when the query is planned:
/// a wrong one is an error naming where it is, before any row.
#[test]
fn a_wrong_date_pattern_fails_the_statement() {
    let path = csv("date_pattern", ORDERS);
    let ddl = orders_ddl(&path);
    let e = run(&format!(
        "{ddl}\nEXPLAIN SELECT DATE_FORMAT(ts, 'yyyy GGG') FROM orders;"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("the pattern letter 'G'"), "{e}");
    assert!(e.contains("line 7"), "{e}");
}

/// A join's conditions on one side filter that side before the join
/// where the result stays the same, so the rows that cannot join are not
/// kept in its state; elsewhere they stay after it.
#[test]
fn conditions_on_one_side_filter_it_before_the_join_where_that_is_sound() -> Result<(), SqlError> {
    let ddl = orders_ddl(&csv("pushed", ORDERS));
    let people = csv("pushed_people", "alice,Berlin\nbob,Paris\n");
    let ddl = format!(
        "{ddl}\nCREATE TABLE people (name STRING, city STRING) WITH ('connector' = 'filesystem',
           'path' = '{}', 'format' = 'csv');",
        people.display()
    );
    let plan = |query: &str| run(&format!("{ddl}\nEXPLAIN {query}"));
    let inner = plan(
        "SELECT o.id, p.city FROM orders o JOIN people p ON o.buyer = p.name AND o.id > 1
         WHERE (p.city = 'Paris' OR p.city = 'Rome') AND o.buyer < p.city",
    )?;
    assert!(
        inner.contains("Calc: where o.id > 1 (pushed below the join)"),
        "{inner}"
    );
    assert!(
        inner.contains("Calc: where (p.city = 'Paris' OR p.city = 'Rome') (pushed below the join)"),
        "{inner}"
    );
    // An outer join's kept side keeps its rows whatever the ON says, and
    // its other side's WHERE sees the NULLs of the rows padded.
    let outer = plan(
        "SELECT o.id, p.city FROM orders o LEFT JOIN people p ON o.buyer = p.name AND o.id > 1
         AND p.city <> 'Rome' WHERE p.city IS NULL AND o.id < 9",
    )?;
    assert!(
        outer.contains("Calc: where o.id < 9 (pushed below the join)"),
        "{outer}"
    );
    assert!(
        outer.contains("Calc: where p.city <> 'Rome' (pushed below the join)"),
        "{outer}"
    );
    assert_eq!(outer.matches("pushed below").count(), 2, "{outer}");
    Ok(())
}

/// A window aggregation a statement computes twice runs once: the second
/// SELECT reads the first's rows (EXPLAIN says "reused"); one with other
/// aggregates runs apart. An aggregate written twice is computed once.
#[test]
fn a_window_aggregation_written_twice_runs_once() -> Result<(), SqlError> {
    let ddl = orders_ddl(&csv("reuse", ORDERS));
    let counts = "SELECT buyer, window_start, COUNT(*) AS n
        FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
        GROUP BY buyer, window_start, window_end";
    let plan = run(&format!(
        "{ddl}\nEXPLAIN {counts}
         UNION ALL
         SELECT buyer || '!', window_end, COUNT(*) + 100
         FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
         GROUP BY buyer, window_start, window_end HAVING COUNT(*) > 1
         UNION ALL
         SELECT buyer, window_start, SUM(id)
         FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
         GROUP BY buyer, window_start, window_end;"
    ))?;
    let aggregations: Vec<&str> = plan
        .lines()
        .filter(|l| l.starts_with("WindowAggregate"))
        .collect();
    assert_eq!(aggregations.len(), 3, "{plan}");
    assert!(!aggregations[0].contains("reused"), "{plan}");
    assert!(
        aggregations[1].ends_with("1 aggregate(s) (reused)"),
        "{plan}"
    );
    assert!(!aggregations[2].contains("reused"), "{plan}");
    // Another WHERE is another aggregation.
    let plan = run(&format!(
        "{ddl}\nEXPLAIN {counts}
         UNION ALL
         SELECT buyer, window_start, COUNT(*)
         FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
         WHERE id > 2
         GROUP BY buyer, window_start, window_end;"
    ))?;
    assert!(!plan.contains("reused"), "{plan}");
    Ok(())
}

const MINI_BATCH_LATENCY: &str = "table.exec.mini-batch.allow-latency";
const MINI_BATCH_SIZE: &str = "table.exec.mini-batch.size";

#[test]
fn union_all_needs_the_same_columns() {
    let path = csv("union", ORDERS);
    let ddl = orders_ddl(&path);
    let e = run(&format!(
        "{ddl}\nSELECT id FROM orders UNION ALL SELECT buyer FROM orders;"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("UNION ALL of different columns: (BIGINT) and (STRING)"),
        "{e}"
    );
    let e = run(&format!(
        "{ddl}\nSELECT id FROM orders EXCEPT ALL SELECT buyer FROM orders;"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("EXCEPT ALL of different columns: (BIGINT) and (STRING)"),
        "{e}"
    );
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT id, ts FROM orders ORDER BY id;");
    assert!(
        e.contains("not supported: ORDER BY without LIMIT on a stream"),
        "{e}"
    );
    let e = err("SELECT id FROM orders LIMIT 2 OFFSET 1;");
    assert!(e.contains("not supported: LIMIT 2 OFFSET 1"), "{e}");
    let e = err("SELECT id FROM orders LIMIT id;");
    assert!(e.contains("LIMIT takes a number of rows, not id"), "{e}");
    let e = err("SELECT buyer, n FROM (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer) ORDER BY n LIMIT 1;");
    assert!(e.contains("ORDER BY … LIMIT over an updating input"), "{e}");
}

#[test]
fn join_mistakes_are_named() {
    let path = csv("join", ORDERS);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT id FROM orders a JOIN orders b ON a.id = b.id;");
    assert!(
        e.contains("column 'id' is ambiguous (in a and b): qualify it"),
        "{e}"
    );
    let e = err("SELECT a.id FROM orders a JOIN orders b ON a.id < b.id;");
    assert!(
        e.contains("not supported: a join without an equality"),
        "{e}"
    );
    let e = err("SELECT a.id FROM orders a CROSS JOIN orders b;");
    assert!(
        e.contains("not supported: CROSS JOIN (inner and outer joins are)"),
        "{e}"
    );
    let e = err("SELECT a.id FROM orders a LEFT JOIN orders b USING (id);");
    assert!(e.contains("not supported: JOIN without ON"), "{e}");
    let e = err("SELECT a.id FROM orders a JOIN orders b ON a.id = b.nope;");
    assert!(e.contains("column 'nope' not found"), "{e}");
    // A chain: the third join's ON names a relation that is not before it.
    let e =
        err("SELECT a.id FROM orders a JOIN orders b ON a.id = b.id JOIN orders c ON c.id = d.id;");
    assert!(
        e.contains("no table or alias 'd' here for 'd.id' (there are a, b, c)"),
        "{e}"
    );
    let e = err("SELECT a.id FROM orders a, orders b, orders c WHERE a.id = b.id;");
    assert!(
        e.contains("not supported: a cross join (no condition of the WHERE joins this table"),
        "{e}"
    );
    let e = err("CREATE VIEW v AS SELECT id FROM orders;\nSELECT a.id FROM orders a, orders b, v WHERE a.id = b.id AND b.id = v.id;");
    assert!(
        e.contains("not supported: FROM a, b, c … of other relations than tables"),
        "{e}"
    );
}

#[test]
fn a_join_with_an_updating_side_passes_its_changes_on() -> Result<(), SqlError> {
    let orders = csv("updating-join", ORDERS);
    let buyers = csv(
        "updating-join-buyers",
        "alice,Berlin\nbob,Paris\nalice,Lisbon\n",
    );
    let script = format!(
        "{}
         CREATE TABLE buyers (name STRING, city STRING)
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         SELECT t.buyer, t.n, b.city
         FROM (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer) AS t
         JOIN buyers AS b ON t.buyer = b.name;",
        orders_ddl(&orders),
        buyers.display()
    );
    // Which side's rows arrive first varies, so the changelog does; what
    // it leaves does not: each buyer's final count, once per city.
    let lines = support::changelog(&script)?;
    assert_eq!(
        support::materialize(&lines),
        [
            "[alice, 2, Berlin]",
            "[alice, 2, Lisbon]",
            "[bob, 1, Paris]"
        ]
    );
    // alice's first count is retracted whenever it was joined: the join
    // passes the -U on (Flink's inner join keeps the arriving row's kind).
    for old in lines.iter().filter(|l| l.contains("alice, 1,")) {
        assert!(old.starts_with("+I") || old.starts_with("-U"), "{old}");
    }
    Ok(())
}

#[test]
fn windows_over_an_updating_table_are_refused() {
    let path = csv("updating-window", ORDERS);
    let e = run(&format!(
        "{}
         CREATE VIEW latest AS SELECT buyer, MAX(ts) AS ts FROM orders GROUP BY buyer;
         SELECT * FROM TABLE(TUMBLE(TABLE latest, DESCRIPTOR(ts), INTERVAL '5' SECOND));",
        orders_ddl(&path)
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("not supported: a window TVF over an updating table"),
        "{e}"
    );
}

#[test]
fn functions_registered_by_the_program_are_called_and_bound() -> Result<(), SqlError> {
    use std::sync::Arc;
    use weir_sql::{Session, SqlType, Value};
    let path = csv("functions", ORDERS);
    let out = support::Captured::default();
    let mut session = Session::with_output(Box::new(out.clone()));
    session.register_function(
        "initial",
        SqlType::String,
        Arc::new(|args: &[Value]| match args {
            [Value::String(s)] => Ok(Value::string(&s[..1])),
            [Value::Null] => Ok(Value::Null),
            other => Err(format!("initial takes one STRING, not {other:?}")),
        }),
    );
    // Any number of arguments, passed in order.
    session.register_function(
        "joined",
        SqlType::String,
        Arc::new(|args: &[Value]| {
            let texts: Vec<String> = args.iter().map(ToString::to_string).collect();
            Ok(Value::string(&texts.join("|")))
        }),
    );
    // A value lent to a function and given back: its own copy.
    session.register_function(
        "same",
        SqlType::String,
        Arc::new(|args: &[Value]| Ok(args[0].clone())),
    );
    session.set("sql-client.execution.result-mode", "changelog");
    session.execute_script(&format!(
        "{}
         CREATE TEMPORARY SYSTEM FUNCTION first_letter AS 'initial' LANGUAGE JAVA;
         CREATE FUNCTION IF NOT EXISTS first_letter AS 'initial';
         SELECT id, initial(buyer), first_letter(UPPER(buyer)),
           joined(), joined(id), joined(id, buyer), joined(id, buyer, 'x', id + 1),
           same(buyer), same('k')
         FROM orders WHERE id < 3;",
        orders_ddl(&path)
    ))?;
    let text = out.text();
    assert!(
        text.contains("+I[1, a, A, , 1, 1|alice, 1|alice|x|2, alice, k]"),
        "{text}"
    );
    assert!(
        text.contains("+I[2, b, B, , 2, 2|bob, 2|bob|x|3, bob, k]"),
        "{text}"
    );
    // A bad argument fails the job with the function's message.
    let e = session
        .execute_script("SELECT initial(id) FROM orders;")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("initial takes one STRING, not [BigInt(1)]"),
        "{e}"
    );
    Ok(())
}

#[test]
fn create_function_mistakes_are_named() {
    let path = csv("function-mistakes", ORDERS);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("CREATE FUNCTION f AS 'com.example.Upper';");
    assert!(
        e.contains("no function 'com.example.Upper' to create 'f' from: Weir runs no Java classes")
            && e.contains("known: com.github.nexmark.flink.udf.CountChar"),
        "{e}"
    );
    let e = err("CREATE FUNCTION f AS 'com.github.nexmark.flink.udf.CountChar';\nCREATE FUNCTION f AS 'com.github.nexmark.flink.udf.CountChar';");
    assert!(e.contains("a function 'f' exists already"), "{e}");
    let e = err("SELECT count_char(buyer, 'a') FROM orders;");
    assert!(e.contains("not supported: the function COUNT_CHAR"), "{e}");
}

/// A window aggregation over a view of one table builds only the view's
/// columns the aggregation names (as a table's scan is cut to them), and
/// its rows are the ones the whole view gives.
#[test]
fn a_window_aggregation_over_a_view_builds_only_the_columns_it_names() -> Result<(), SqlError> {
    let ddl = orders_ddl(&csv("view-cut", ORDERS));
    let view = "CREATE VIEW v AS SELECT *, amount * 2 AS twice, UPPER(buyer) AS shout FROM orders;";
    let query = "SELECT buyer, SUM(twice) AS s, window_start
                 FROM TABLE(TUMBLE(TABLE v, DESCRIPTOR(ts), INTERVAL '5' SECOND))
                 GROUP BY buyer, window_start, window_end;";
    let plan = run(&format!("{ddl}\n{view}\nEXPLAIN {query}"))?;
    assert!(plan.contains("Calc: select buyer, ts, twice\n"), "{plan}");
    let mut rows = support::changelog(&format!("{ddl}\n{view}\n{query}"))?;
    rows.sort();
    assert_eq!(
        rows,
        [
            "+I[alice, 25.00, 2020-04-15 08:00:00.000]",
            "+I[alice, 80.50, 2020-04-15 08:00:05.000]",
            "+I[bob, 6.00, 2020-04-15 08:00:00.000]",
            "+I[carol, NULL, 2020-04-15 08:00:05.000]",
        ]
    );
    Ok(())
}

#[test]
fn deduplication_by_arrival_keeps_the_first_or_last_row() -> Result<(), SqlError> {
    let path = csv("dedup-proctime", ORDERS);
    let dedup = |order: &str| {
        format!(
            "{}
             CREATE VIEW v AS SELECT *, PROCTIME() AS pt FROM orders;
             SELECT buyer, id FROM (
               SELECT buyer, id, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY pt {order}) AS rk
               FROM v
             ) WHERE rk = 1;",
            orders_ddl(&path)
        )
    };
    // The first row by arrival: inserts only.
    let first = support::changelog(&dedup("ASC"))?;
    assert_eq!(first, ["+I[alice, 1]", "+I[bob, 2]", "+I[carol, 4]"]);
    // The last row by arrival: alice's second order replaces her first.
    let last = support::changelog(&dedup("DESC"))?;
    assert!(last.contains(&"-U[alice, 1]".to_string()), "{last:?}");
    assert_eq!(
        support::materialize(&last),
        ["[alice, 3]", "[bob, 2]", "[carol, 4]"]
    );
    Ok(())
}

#[test]
fn ranking_mistakes_are_named() {
    let path = csv("rank-mistakes", ORDERS);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY id) AS r FROM orders);");
    assert!(
        e.contains("not supported: ROW_NUMBER without a filter on its number in the outer query (WHERE r <= N)"),
        "{e}"
    );
    let e = err("SELECT * FROM (SELECT id, RANK() OVER (PARTITION BY buyer ORDER BY id) AS r FROM orders) WHERE r <= 2;");
    assert!(
        e.contains("not supported: RANK … OVER (only ROW_NUMBER"),
        "{e}"
    );
    let e = err("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY buyer) AS r FROM orders) WHERE r <= 2;");
    assert!(e.contains("ROW_NUMBER() OVER needs an ORDER BY"), "{e}");
    let e = err("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY id) AS r FROM orders) WHERE r BETWEEN 2 AND 3;");
    assert!(
        e.contains("not supported: a Top-N whose ranks do not start at 1"),
        "{e}"
    );
    let e = err("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY buyer ORDER BY id) AS r FROM orders) WHERE r < 1;");
    assert!(e.contains("no row has a rank in 1..=0"), "{e}");
}

#[test]
fn an_outer_join_pads_a_row_again_when_its_partner_is_retracted() -> Result<(), SqlError> {
    let orders = csv("outer-retract", ORDERS);
    let buyers = csv(
        "outer-retract-buyers",
        "alice,Berlin\nbob,Paris\nalice,Lisbon\n",
    );
    let script = format!(
        "{}
         CREATE TABLE buyers (name STRING, city STRING)
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         SELECT o.id, r.name, r.n
         FROM orders AS o
         LEFT JOIN (SELECT name, COUNT(*) AS n FROM buyers GROUP BY name) AS r
           ON o.buyer = r.name AND r.n < 2;",
        orders_ddl(&orders),
        buyers.display()
    );
    // alice's count goes from 1 (a partner) to 2 (none): her orders end
    // padded with NULLs, whichever table's rows came first.
    let lines = support::changelog(&script)?;
    assert_eq!(
        support::materialize(&lines),
        [
            "[1, NULL, NULL]",
            "[2, bob, 1]",
            "[3, NULL, NULL]",
            "[4, NULL, NULL]"
        ]
    );
    Ok(())
}

#[test]
fn time_bounds_between_the_sides_make_an_interval_join() -> Result<(), SqlError> {
    let path = csv("interval-plan", ORDERS);
    let ddl = orders_ddl(&path);
    let plan = |on: &str| {
        run(&format!(
            "{ddl}\nEXPLAIN SELECT a.id FROM orders a JOIN orders b ON a.id = b.id AND {on};"
        ))
    };
    let both = plan("b.ts >= a.ts - INTERVAL '1' SECOND AND b.ts < a.ts + INTERVAL '2' SECOND")?;
    assert!(
        both.contains("IntervalJoin: inner, on ") && both.contains("in [-1999, 1000] ms"),
        "{both}"
    );
    // One bound is not an interval: a regular join.
    let one = plan("b.ts >= a.ts")?;
    assert!(
        one.contains("Join: inner, on") && !one.contains("Interval"),
        "{one}"
    );
    // A column that is not a time attribute bounds nothing.
    let other = plan("b.id BETWEEN a.id AND a.id + 1")?;
    assert!(!other.contains("Interval"), "{other}");
    Ok(())
}

#[test]
fn a_full_window_join_pads_both_sides_once_per_window() -> Result<(), SqlError> {
    let orders = csv("window-join", ORDERS);
    let payments = csv(
        "window-join-payments",
        "1,2020-04-15 08:00:03\n2,2020-04-15 08:00:20\n5,2020-04-15 08:00:11\n",
    );
    let ddl = format!(
        "{}
         CREATE TABLE payments (order_id BIGINT, paid TIMESTAMP(3),
           WATERMARK FOR paid AS paid - INTERVAL '1' HOUR)
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
        orders_ddl(&orders),
        payments.display()
    );
    let query = "SELECT L.id, R.order_id
         FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))) L
         FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE payments, DESCRIPTOR(paid), INTERVAL '10' SECOND))) R
         ON L.id = R.order_id AND L.window_start = R.window_start AND L.window_end = R.window_end;";
    let script = format!("{ddl}\n{query}");
    // Inserts only: each window is joined once, when it closes.
    assert_eq!(
        support::changelog(&script)?,
        [
            "+I[1, 1]",
            "+I[2, NULL]",
            "+I[3, NULL]",
            "+I[4, NULL]",
            "+I[NULL, 2]",
            "+I[NULL, 5]"
        ]
    );
    let plan = run(&format!("{ddl}\nEXPLAIN {query}"))?;
    assert!(plan.contains("WindowJoin: full outer, on"), "{plan}");
    Ok(())
}

/// Window joins hold rows by window end: rows of two windows that end
/// together but start apart (a hopping and a cumulating window) do not
/// join.
#[test]
fn a_window_join_joins_windows_that_start_and_end_together() -> Result<(), SqlError> {
    let orders = csv(
        "window-join-starts",
        "1,alice,1.00,2020-04-15 08:00:07\n2,bob,2.00,2020-04-15 08:00:12\n",
    );
    let query = "SELECT L.id, L.window_start, L.window_end
         FROM (SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) L
         JOIN (SELECT * FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) R
         ON L.id = R.id AND L.window_start = R.window_start AND L.window_end = R.window_end;";
    let script = format!("{}\n{query}", orders_ddl(&orders));
    // Order 2's windows ending at :15 start at :05 (hopping) and :10
    // (cumulating).
    assert_eq!(
        support::changelog(&script)?,
        [
            "+I[1, 2020-04-15 08:00:00.000, 2020-04-15 08:00:10.000]",
            "+I[2, 2020-04-15 08:00:10.000, 2020-04-15 08:00:20.000]"
        ]
    );
    Ok(())
}

#[test]
fn datagen_makes_rows_within_the_options() -> Result<(), SqlError> {
    let ddl = "CREATE TABLE t (id BIGINT, k INT, name STRING, amount DECIMAL(6, 2), maybe INT,
                 big AS id * 10) WITH (
                 'connector' = 'datagen', 'rows-per-second' = '100000',
                 'fields.id.kind' = 'sequence', 'fields.id.start' = '11', 'fields.id.end' = '310',
                 'fields.k.min' = '-2', 'fields.k.max' = '2', 'fields.name.length' = '6',
                 'fields.amount.min' = '1', 'fields.amount.max' = '5',
                 'fields.maybe.null-rate' = '0.5');";
    let lines = support::changelog(&format!(
        "{ddl}\nSELECT id, k, name, amount, maybe, big FROM t;"
    ))?;
    // The sequence bounds the table: 300 rows, ids 11..=310.
    assert_eq!(lines.len(), 300);
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|l| l[3..l.len() - 1].split(", ").map(str::to_string).collect())
        .collect();
    let mut ids: Vec<i64> = rows.iter().map(|r| r[0].parse().expect("id")).collect();
    ids.sort_unstable();
    assert_eq!(ids, (11..=310).collect::<Vec<_>>());
    let ks: std::collections::BTreeSet<i32> =
        rows.iter().map(|r| r[1].parse().expect("k")).collect();
    assert_eq!(ks, (-2..=2).collect(), "every value of the range, no other");
    assert!(
        rows.iter().all(|r| r[2].len() == 6),
        "names of 6 characters"
    );
    assert!(rows.iter().all(|r| {
        let a: f64 = r[3].parse().expect("amount");
        (1.0..=5.0).contains(&a) && r[3].split('.').nth(1).is_some_and(|f| f.len() == 2)
    }));
    let nulls = rows.iter().filter(|r| r[4] == "NULL").count();
    assert!(
        (90..=210).contains(&nulls),
        "{nulls} NULLs of 300 at a rate of 0.5"
    );
    assert!(rows
        .iter()
        .all(|r| r[5] == (r[0].parse::<i64>().expect("id") * 10).to_string()));
    // The same rows in every run.
    assert_eq!(
        support::changelog(&format!(
            "{ddl}\nSELECT id, k, name, amount, maybe, big FROM t;"
        ))?,
        lines
    );
    let err = |options: &str| {
        run(&format!(
            "CREATE TABLE u (id BIGINT) WITH ('connector' = 'datagen', {options});\nSELECT * FROM u;"
        ))
        .unwrap_err()
        .to_string()
    };
    let e = err("'fields.id.kind' = 'sequence', 'fields.id.start' = '1'");
    assert!(
        e.contains("the sequence column 'id' needs 'fields.id.start' and 'fields.id.end'"),
        "{e}"
    );
    let e = err("'fields.idd.min' = '1'");
    assert!(
        e.contains("unsupported options for connector 'datagen': fields.idd.min"),
        "{e}"
    );
    let e = err("'fields.id.kind' = 'counter'");
    assert!(
        e.contains("'fields.id.kind' must be random or sequence, not 'counter'"),
        "{e}"
    );
    let e = err("'rows-per-second' = '0'");
    assert!(e.contains("'rows-per-second' must be positive"), "{e}");
    Ok(())
}

#[test]
fn filesystem_tables_write_and_read_csv_and_json() -> Result<(), SqlError> {
    let path = csv("fs-sink", ORDERS);
    let out = std::env::temp_dir().join(format!("weir-sql-fs-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    for format in ["csv", "json"] {
        let dir = out.join(format);
        let table = |name: &str| {
            format!(
                "CREATE TABLE {name} (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = '{format}'{});",
                dir.display(),
                // An empty CSV field is NULL only when it says so, as in Flink.
                if format == "csv" { ", 'csv.null-literal' = ''" } else { "" }
            )
        };
        let script = format!(
            "{}\n{}\nINSERT INTO sunk SELECT id, buyer, amount, ts FROM orders WHERE id > 1;\n{}\nSELECT * FROM back;",
            orders_ddl(&path),
            table("sunk"),
            table("back")
        );
        let lines = support::changelog(&script)?;
        assert_eq!(
            lines,
            [
                "+I[2, bob, 3.00, 2020-04-15 08:00:04.000]",
                "+I[3, alice, 40.25, 2020-04-15 08:00:07.000]",
                "+I[4, carol, NULL, 2020-04-15 08:00:09.000]"
            ],
            "{format}"
        );
        // Committed part files, named for the format.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .expect("the sink's directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| n.starts_with("part-") && n.ends_with(&format!(".{format}"))),
            "{names:?}"
        );
    }
    let json = std::fs::read_to_string(
        std::fs::read_dir(out.join("json"))
            .expect("dir")
            .next()
            .expect("a part file")
            .expect("entry")
            .path(),
    )
    .expect("part file");
    assert!(
        json.contains(r#"{"id":4,"buyer":"carol","amount":null,"ts":"2020-04-15 08:00:09.000"}"#),
        "{json}"
    );
    // An updating query cannot go into files.
    let e = run(&format!(
        "{}\nCREATE TABLE f (buyer STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         INSERT INTO f SELECT buyer, COUNT(*) FROM orders GROUP BY buyer;",
        orders_ddl(&path),
        out.join("updates").display()
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("the filesystem sink takes inserts only"), "{e}");
    Ok(())
}

#[test]
fn over_aggregations_by_arrival_count_the_rows_so_far() -> Result<(), SqlError> {
    let path = csv("over-proctime", ORDERS);
    let out = support::changelog(&format!(
        "{}
         CREATE VIEW v AS SELECT *, PROCTIME() AS pt FROM orders;
         SELECT id, COUNT(*) OVER (PARTITION BY buyer ORDER BY pt
             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n,
           SUM(id) OVER (PARTITION BY buyer ORDER BY pt
             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ids
         FROM v;",
        orders_ddl(&path)
    ))?;
    // One source, one channel: rows arrive in file order.
    assert_eq!(
        out,
        ["+I[1, 1, 1]", "+I[2, 1, 2]", "+I[3, 2, 4]", "+I[4, 1, 4]"]
    );
    Ok(())
}

#[test]
fn over_mistakes_are_named() {
    let path = csv("over-mistakes", ORDERS);
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT id, SUM(id) OVER (PARTITION BY buyer ORDER BY id) FROM orders;");
    assert!(
        e.contains("an OVER window must be ordered by the input's time attribute"),
        "{e}"
    );
    let e = err("SELECT id, SUM(id) OVER (ORDER BY ts DESC) FROM orders;");
    assert!(e.contains("ascending"), "{e}");
    let e = err("SELECT SUM(id) OVER (ORDER BY ts), COUNT(*) OVER (PARTITION BY buyer ORDER BY ts) FROM orders;");
    assert!(
        e.contains("not supported: OVER aggregations over different windows in one SELECT"),
        "{e}"
    );
    let e = err(
        "SELECT SUM(id) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM orders;",
    );
    assert!(e.contains("ends after CURRENT ROW"), "{e}");
    let e = err(
        "SELECT SUM(id) OVER (ORDER BY ts RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders;",
    );
    assert!(e.contains("takes an INTERVAL"), "{e}");
    let e = err("SELECT SUM(id) OVER w FROM orders;");
    assert!(e.contains("no window named 'w'"), "{e}");
    let e = err("SELECT n, COUNT(*) OVER (ORDER BY t) FROM (SELECT buyer, COUNT(*) AS n, MAX(ts) AS t FROM orders GROUP BY buyer);");
    assert!(
        e.contains("an OVER aggregation of an updating input"),
        "{e}"
    );
}

#[test]
fn order_by_time_emits_rows_in_time_order_then_by_the_other_keys() -> Result<(), SqlError> {
    let path = csv(
        "time-sort",
        "1,a,3.00,2020-04-15 08:00:05\n2,b,9.00,2020-04-15 08:00:01\n\
         3,c,5.00,2020-04-15 08:00:05\n4,d,1.00,2020-04-15 08:00:03\n\
         5,e,7.00,2020-04-15 08:00:05\n",
    );
    let out = run(&format!(
        "SET 'pipeline.auto-watermark-interval' = '0';
         {}
         SELECT id, amount, ts FROM orders ORDER BY ts, amount DESC;",
        orders_ddl(&path)
    ))?;
    let ids: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("| +I | "))
        .map(|l| l.split('|').next().unwrap_or_default().trim())
        .collect();
    assert_eq!(ids, ["2", "4", "5", "3", "1"], "{out}");
    let ddl = orders_ddl(&path);
    let err = |sql: &str| run(&format!("{ddl}\n{sql}")).unwrap_err().to_string();
    let e = err("SELECT id, ts FROM orders ORDER BY ts DESC;");
    assert!(
        e.contains("unless it starts with the event-time attribute, ascending"),
        "{e}"
    );
    let e = err("SELECT id, ts FROM orders ORDER BY id;");
    assert!(
        e.contains("unless it starts with the event-time attribute"),
        "{e}"
    );
    let e = err("SELECT id FROM orders ORDER BY ts;");
    assert!(e.contains("column 'ts' not found"), "{e}");
    Ok(())
}

#[test]
fn metadata_columns_need_a_connector_that_gives_them() {
    let path = csv("metadata", ORDERS);
    let e = run(&format!(
        "CREATE TABLE t (id BIGINT, at TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL)
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         SELECT id FROM t;",
        path.display()
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("'at' is a METADATA column, which only the kafka connector gives here"),
        "{e}"
    );
}

/// An `INSERT` whose columns differ in type from the sink's (numeric to
/// numeric) writes each value as the sink's column type.
#[test]
fn an_insert_casts_each_value_to_its_sink_columns_type() -> Result<(), SqlError> {
    let path = csv("sink-casts", ORDERS);
    let dir = std::env::temp_dir().join(format!("weir-sql-casts-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let table = |name: &str, types: &str| {
        format!(
            "CREATE TABLE {name} ({types}) WITH ('connector' = 'filesystem', \
             'path' = '{}', 'format' = 'csv');",
            dir.display()
        )
    };
    let script = format!(
        "{}\n{}\nINSERT INTO sunk SELECT id, buyer, amount, amount, id FROM orders WHERE id < 3;\n{}\nSELECT * FROM back;",
        orders_ddl(&path),
        // Cast, as it is, widened (the same value), cast, cast.
        table(
            "sunk",
            "id DECIMAL(5, 1), buyer STRING, wide DECIMAL(12, 2), amount DOUBLE, n INT"
        ),
        table(
            "back",
            "id STRING, buyer STRING, wide STRING, amount STRING, n STRING"
        )
    );
    let mut lines = support::changelog(&script)?;
    lines.sort();
    assert_eq!(
        lines,
        [
            "+I[1.0, alice, 12.50, 12.5, 1]",
            "+I[2.0, bob, 3.00, 3.0, 2]"
        ]
    );
    Ok(())
}

/// A join with a window's own MAX or MIN runs as one operator where its
/// conditions keep a row within its window's span (through one window
/// column or several, in the ON or the WHERE, either side first), and as a
/// regular join where they reach further or the state has a TTL.
#[test]
fn a_join_with_its_own_windows_extremum_runs_as_one_operator_where_it_can() -> Result<(), SqlError>
{
    let ddl = orders_ddl(&csv("extremum", ORDERS));
    let plan = |settings: &str, windows_first: bool, bound: &str| {
        let windows = "(SELECT MAX(id) AS top, window_start AS s, window_end AS e
            FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
            GROUP BY window_start, window_end) m";
        let tables = if windows_first {
            format!("{windows}, orders o")
        } else {
            format!("orders o, {windows}")
        };
        run(&format!(
            "{ddl}\n{settings}\nEXPLAIN SELECT o.id, m.e FROM {tables} WHERE o.id = m.top AND {bound};"
        ))
    };
    for (windows_first, bound) in [
        (false, "o.ts BETWEEN m.e - INTERVAL '10' SECOND AND m.e"),
        (true, "o.ts >= m.s AND o.ts < m.e"),
        (false, "m.s <= o.ts AND o.ts <= m.s + INTERVAL '5' SECOND"),
    ] {
        let p = plan("", windows_first, bound)?;
        assert!(p.contains("WindowExtremumJoin: inner"), "{bound}: {p}");
        assert!(!p.contains("WindowAggregate"), "{bound}: {p}");
    }
    for (settings, bound) in [
        ("", "o.ts BETWEEN m.e - INTERVAL '20' SECOND AND m.e"),
        ("", "o.ts >= m.s"),
        (
            "SET 'table.exec.state.ttl' = '1 h';",
            "o.ts BETWEEN m.e - INTERVAL '10' SECOND AND m.e",
        ),
    ] {
        let p = plan(settings, false, bound)?;
        assert!(p.contains("Join: inner"), "{bound}: {p}");
        assert!(!p.contains("WindowExtremumJoin"), "{bound}: {p}");
    }
    Ok(())
}

/// A regular join keeps and joins only the columns the statement reads
/// above it or in its `ON` beyond the key's equalities (which hold by
/// keying); the rows are the same.
#[test]
fn a_regular_join_keeps_only_the_columns_read() -> Result<(), SqlError> {
    let path = csv("join-columns", ORDERS);
    let ddl = orders_ddl(&path);
    let pairs = "SELECT a.id, b.amount FROM orders a JOIN orders b \
                 ON a.buyer = b.buyer AND a.id < b.id";
    let plan = run(&format!("{ddl}\nEXPLAIN {pairs};"))?;
    assert!(plan.contains("keeping a.id, b.id, b.amount\n"), "{plan}");
    let lines = support::changelog(&format!("{ddl}\n{pairs};"))?;
    assert_eq!(support::materialize(&lines), ["[1, 40.25]"]);
    // Grouped: the keys and the aggregates' arguments.
    let grouped = "SELECT a.buyer, MAX(b.amount) AS top, COUNT(*) AS n \
                   FROM orders a JOIN orders b ON a.buyer = b.buyer GROUP BY a.buyer";
    let plan = run(&format!("{ddl}\nEXPLAIN {grouped};"))?;
    assert!(plan.contains("keeping a.buyer, b.amount\n"), "{plan}");
    let lines = support::changelog(&format!("{ddl}\n{grouped};"))?;
    assert_eq!(
        support::materialize(&lines),
        ["[alice, 40.25, 4]", "[bob, 3.00, 1]", "[carol, NULL, 1]"]
    );
    // Every column read: all kept.
    let plan = run(&format!(
        "{ddl}\nEXPLAIN SELECT * FROM orders a JOIN orders b ON a.id = b.id;"
    ))?;
    assert!(!plan.contains("keeping"), "{plan}");
    Ok(())
}

/// A `GROUP BY` over a regular join runs in the join's operator when its
/// groups are within the join's keys (a key column is grouped by, either
/// side's), the join is inner, and neither a state time-to-live nor
/// mini-batch is set; otherwise it is an aggregation after the join.
#[test]
fn a_group_by_within_the_join_key_runs_in_the_join() -> Result<(), SqlError> {
    let ddl = orders_ddl(&csv("join-aggregate", ORDERS));
    let plan = |settings: &str, join: &str, keys: &str| {
        run(&format!(
            "{ddl}
{settings}
EXPLAIN SELECT {keys}, MAX(b.amount) AS top              FROM orders a {join} orders b ON a.buyer = b.buyer AND a.id <= b.id GROUP BY {keys};"
        ))
    };
    let fused = "in the join's operator";
    for keys in ["a.buyer", "b.buyer", "a.id, b.buyer"] {
        let p = plan("", "JOIN", keys)?;
        assert!(p.contains(fused), "{keys}: {p}");
        assert!(p.contains("Join: inner"), "{keys}: {p}");
    }
    for (settings, join, keys) in [
        ("", "JOIN", "a.id"),
        ("", "JOIN", "UPPER(a.buyer)"),
        ("", "LEFT JOIN", "a.buyer"),
        ("SET 'table.exec.state.ttl' = '1 h';", "JOIN", "a.buyer"),
        (
            "SET 'table.exec.mini-batch.enabled' = 'true';
             SET 'table.exec.mini-batch.allow-latency' = '1 s';
             SET 'table.exec.mini-batch.size' = '100';",
            "JOIN",
            "a.buyer",
        ),
    ] {
        let p = plan(settings, join, keys)?;
        assert!(!p.contains(fused), "{settings} {join} {keys}: {p}");
        assert!(
            p.contains("GroupAggregate"),
            "{settings} {join} {keys}: {p}"
        );
    }
    // alice's orders 1 and 3 (12.50, 40.25): each with those from it on.
    let lines = support::changelog(&format!(
        "{ddl}
SELECT a.id, a.buyer, MAX(b.amount) AS top, COUNT(*) AS n FROM orders a          JOIN orders b ON a.buyer = b.buyer AND a.id <= b.id GROUP BY a.id, a.buyer;"
    ))?;
    assert_eq!(
        support::materialize(&lines),
        [
            "[1, alice, 40.25, 2]",
            "[2, bob, 3.00, 1]",
            "[3, alice, 40.25, 1]",
            "[4, carol, NULL, 1]"
        ]
    );
    Ok(())
}

/// A join's tables are scanned for the columns the statement reads and
/// nothing else, as a single table is: a value no query column reads is
/// not even parsed.
#[test]
fn a_join_scans_only_the_columns_read() -> Result<(), SqlError> {
    let people = csv("join-scan-people", "1,alice,x1\n2,bob,7\n");
    let scores = csv("join-scan-scores", "1,10\n2,20\n");
    let ddl = format!(
        "CREATE TABLE a (id BIGINT, name STRING, n BIGINT) WITH ('connector' = 'filesystem',
           'path' = '{}', 'format' = 'csv');
         CREATE TABLE b (id BIGINT, v BIGINT) WITH ('connector' = 'filesystem',
           'path' = '{}', 'format' = 'csv');",
        people.display(),
        scores.display()
    );
    let lines = support::changelog(&format!(
        "{ddl}\nSELECT a.name, b.v FROM a JOIN b ON a.id = b.id;"
    ))?;
    assert_eq!(support::materialize(&lines), ["[alice, 10]", "[bob, 20]"]);
    // The join keeps what its scans give it; its state's layout (and its
    // uid) still names the columns, since its tables have more.
    let plan = run(&format!(
        "{ddl}\nEXPLAIN SELECT a.name, b.v FROM a JOIN b ON a.id = b.id;"
    ))?;
    assert!(plan.contains("keeping a.name, b.v\n"), "{plan}");
    // A mistake in the ON is named over all the tables' columns.
    fails_saying(
        &format!("{ddl}\nSELECT a.name FROM a JOIN b ON a.id = b.nope;"),
        "the input has id, name, n, id, v",
    );
    // Read, the bad value fails the job, naming it.
    fails_saying(
        &format!("{ddl}\nSELECT a.n, b.v FROM a JOIN b ON a.id = b.id;"),
        "'x1' is not a valid BIGINT",
    );
    Ok(())
}

/// A window aggregation's scan reads only the columns it reads: its keys,
/// arguments, `WHERE` and time column.
#[test]
fn a_window_aggregation_scans_only_the_columns_read() -> Result<(), SqlError> {
    let path = csv(
        "window-scan",
        "a,1,2020-04-15 08:00:01\nb,x1,2020-04-15 08:00:02\na,3,2020-04-15 08:00:11\n",
    );
    let ddl = format!(
        "CREATE TABLE t (k STRING, n BIGINT, ts TIMESTAMP(3),
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
        path.display()
    );
    let window = "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))";
    let lines = support::changelog(&format!(
        "{ddl}\nSELECT k, window_start, COUNT(*) {window} GROUP BY k, window_start, window_end;"
    ))?;
    assert_eq!(
        support::materialize(&lines),
        [
            "[a, 2020-04-15 08:00:00.000, 1]",
            "[a, 2020-04-15 08:00:10.000, 1]",
            "[b, 2020-04-15 08:00:00.000, 1]"
        ]
    );
    // A mistake is named over all the table's columns.
    fails_saying(
        &format!("{ddl}\nSELECT k, SUM(nope) {window} GROUP BY k, window_start, window_end;"),
        "the input has k, n, ts",
    );
    // Read, the bad value fails the job, naming it.
    fails_saying(
        &format!("{ddl}\nSELECT k, SUM(n) {window} GROUP BY k, window_start, window_end;"),
        "'x1' is not a valid BIGINT",
    );
    Ok(())
}

/// A temporal join that Flink would refuse, or that Weir cannot run, is
/// named before any row flows, as is a table version outside a join.
#[test]
fn a_temporal_join_that_cannot_run_says_why() {
    let orders = orders_ddl(&csv("temporal-orders", ORDERS));
    let tiers = csv("temporal-tiers", "alice,gold,2020-04-15 08:00:00\n");
    let table = |name: &str, key: &str| {
        format!(
            "CREATE TABLE {name} (buyer STRING, tier STRING, since TIMESTAMP(3), {key}
               WATERMARK FOR since AS since - INTERVAL '1' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
            tiers.display()
        )
    };
    let script = |query: &str| {
        format!(
            "{orders}\n{}\n{}\n{query}",
            table("tiers", "PRIMARY KEY (buyer) NOT ENFORCED,"),
            table("tier_log", "")
        )
    };
    let cases = [
        (
            "SELECT o.id FROM orders AS o JOIN tier_log FOR SYSTEM_TIME AS OF o.ts AS t \
             ON o.buyer = t.buyer",
            "`t` is not a versioned table",
        ),
        (
            "SELECT o.id FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t ON o.id = 1",
            "needs an equality between the left side and a column of `t`",
        ),
        (
            "SELECT o.id FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t \
             ON o.buyer = t.tier",
            "no equality for t.buyer",
        ),
        (
            "SELECT o.id FROM orders AS o RIGHT JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t \
             ON o.buyer = t.buyer",
            "a temporal join other than JOIN or LEFT JOIN",
        ),
        (
            "SELECT o.id FROM orders AS o JOIN tiers \
             FOR SYSTEM_TIME AS OF o.ts - INTERVAL '1' SECOND AS t ON o.buyer = t.buyer",
            "only AS OF the left table's event-time attribute (o.ts)",
        ),
        (
            "SELECT o.id FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.nope AS t \
             ON o.buyer = t.buyer",
            "nope",
        ),
        (
            "SELECT * FROM tiers FOR SYSTEM_TIME AS OF TIMESTAMP '2020-04-15 08:00:00'",
            "outside a temporal join",
        ),
    ];
    for (query, says) in cases {
        fails_saying(&script(query), says);
    }
    // Processing time: only a lookup source could answer it.
    let by_proctime = format!(
        "CREATE TABLE clicks (buyer STRING, pt AS PROCTIME())
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         {}
         SELECT c.buyer, t.tier FROM clicks AS c
           JOIN tiers FOR SYSTEM_TIME AS OF c.pt AS t ON c.buyer = t.buyer",
        csv("temporal-clicks", "alice\n").display(),
        table("tiers", "PRIMARY KEY (buyer) NOT ENFORCED,")
    );
    fails_saying(&by_proctime, "a processing-time temporal join");
}

/// A statement set's INSERTs run as one job (reading their common table
/// once): each table gets its rows; both of Flink's forms are read, and
/// EXPLAIN shows each INSERT's plan with its sink.
#[test]
fn a_statement_set_writes_every_table_in_one_job() -> Result<(), SqlError> {
    let path = csv("statement-set", ORDERS);
    let out = std::env::temp_dir().join(format!("weir-sql-set-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let table = |name: &str, dir: &str, columns: &str| {
        format!(
            "CREATE TABLE {name} ({columns})
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
            out.join(dir).display()
        )
    };
    let tables = format!(
        "{}\n{}\n{}\n{}\n{}",
        orders_ddl(&path),
        table("cheap", "cheap", "id BIGINT, buyer STRING"),
        table("totals", "totals", "buyer STRING, n BIGINT"),
        table("cheap_back", "cheap", "id BIGINT, buyer STRING"),
        table("totals_back", "totals", "buyer STRING, n BIGINT"),
    );
    let inserts = "INSERT INTO cheap SELECT id, buyer FROM orders WHERE amount < 20;
         INSERT INTO totals SELECT buyer, id * 10 FROM orders WHERE id > 2;";
    let explained = run(&format!(
        "{tables}\nEXPLAIN STATEMENT SET BEGIN\n{inserts}\nEND;"
    ))?;
    assert!(
        explained.contains("Sink: cheap") && explained.contains("Sink: totals"),
        "{explained}"
    );
    for set in [
        format!("EXECUTE STATEMENT SET BEGIN\n{inserts}\nEND;"),
        format!("BEGIN STATEMENT SET;\n{inserts}\nEND;"),
    ] {
        let _ = std::fs::remove_dir_all(&out);
        let lines = support::changelog(&format!(
            "{tables}\n{set}\nSELECT * FROM cheap_back;\nSELECT * FROM totals_back;"
        ))?;
        assert_eq!(
            lines,
            [
                "+I[1, alice]",
                "+I[2, bob]",
                "+I[alice, 30]",
                "+I[carol, 40]"
            ],
            "{set}"
        );
    }
    fails_saying(
        &format!("{tables}\nEXECUTE STATEMENT SET BEGIN\nSELECT * FROM orders;\nEND;"),
        "a statement other than INSERT INTO in a STATEMENT SET",
    );
    fails_saying(
        &format!("{tables}\nEXECUTE STATEMENT SET BEGIN\n{inserts}"),
        "expected END to close the STATEMENT SET",
    );
    Ok(())
}

/// `CREATE TABLE … WITH (…) AS SELECT`: the table takes the query's
/// columns and its rows, in a job of its own, and is then a table like
/// any other; what it cannot take is named before a row flows.
#[test]
fn create_table_as_select_writes_the_querys_rows() -> Result<(), SqlError> {
    let orders = orders_ddl(&csv("ctas", ORDERS));
    let dir = std::env::temp_dir().join(format!("weir-sql-ctas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let with = format!(
        "WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv')",
        dir.display()
    );
    let lines = support::changelog(&format!(
        "{orders}
         CREATE TABLE cheap {with}
         AS SELECT id, UPPER(buyer) AS who, amount * 2 AS doubled FROM orders WHERE amount < 20;
         SELECT who, doubled + 1 FROM cheap;"
    ))?;
    assert_eq!(lines, ["+I[ALICE, 26.00]", "+I[BOB, 7.00]"]);
    let explained = run(&format!(
        "{orders}
         CREATE TABLE cheap {with} AS SELECT id FROM orders WHERE amount < 0;
         EXPLAIN SELECT * FROM cheap;"
    ))?;
    assert!(explained.contains("TableSourceScan: cheap"), "{explained}");
    let cases = [
        (
            format!("CREATE TABLE orders {with} AS SELECT id FROM orders;"),
            "a table or view 'orders' exists already",
        ),
        (
            format!("CREATE TABLE t (id BIGINT) {with} AS SELECT id FROM orders;"),
            "columns declared in CREATE TABLE … AS SELECT",
        ),
        (
            format!(
                "CREATE TABLE t (PRIMARY KEY (nope) NOT ENFORCED) {with} AS SELECT id FROM orders;"
            ),
            "nope",
        ),
        (
            "CREATE TABLE t AS SELECT id FROM orders;".to_string(),
            "needs WITH (…) options",
        ),
        (
            format!("CREATE TEMPORARY TABLE t {with} AS SELECT id FROM orders;"),
            "CREATE TEMPORARY TABLE … AS SELECT",
        ),
        (
            format!("CREATE TABLE t {with} AS SELECT NULL AS x FROM orders;"),
            "the query's column 'x' has no type",
        ),
        (
            format!("CREATE TABLE t {with};"),
            "expected AS SELECT after the options",
        ),
    ];
    for (statement, says) in cases {
        fails_saying(&format!("{orders}\n{statement}"), says);
    }
    Ok(())
}

/// The SQL client's catalog statements: `SHOW TABLES` (views too, as
/// Flink lists them), `SHOW VIEWS`, `DESCRIBE` a table or view (the time
/// attributes, key, computed columns and watermark shown as Flink shows
/// them) and `DROP TABLE` / `DROP VIEW`, whose mistakes are named.
#[test]
fn tables_and_views_are_listed_described_and_dropped() -> Result<(), SqlError> {
    let script = "CREATE TABLE s (id BIGINT NOT NULL, amount DECIMAL(10, 2), ts TIMESTAMP(3),
           pt AS PROCTIME(), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND,
           PRIMARY KEY (id) NOT ENFORCED)
         WITH ('connector' = 'datagen', 'number-of-rows' = '3');
         CREATE VIEW v AS SELECT id, ts FROM s;
         SHOW TABLES; SHOW VIEWS; DESCRIBE s; DESC v;
         DROP VIEW v; DROP TABLE IF EXISTS nope; SHOW TABLES; SHOW VIEWS;";
    let out = run(script)?;
    let expected = "\
+------------+
| table name |
+------------+
|          s |
|          v |
+------------+
2 rows in set
+-----------+
| view name |
+-----------+
|         v |
+-----------+
1 row in set
+--------+--------------------------------------+-------+---------+---------------+--------------------------+
|   name |                                 type |  null |     key |        extras |                watermark |
+--------+--------------------------------------+-------+---------+---------------+--------------------------+
|     id |                               BIGINT | FALSE | PRI(id) |               |                          |
| amount |                       DECIMAL(10, 2) |  TRUE |         |               |                          |
|     ts |               TIMESTAMP(3) *ROWTIME* |  TRUE |         |               | ts - INTERVAL '1' SECOND |
|     pt | TIMESTAMP_LTZ(3) NOT NULL *PROCTIME* | FALSE |         | AS PROCTIME() |                          |
+--------+--------------------------------------+-------+---------+---------------+--------------------------+
4 rows in set
+------+------------------------+------+-----+--------+-----------+
| name |                   type | null | key | extras | watermark |
+------+------------------------+------+-----+--------+-----------+
|   id |                 BIGINT | TRUE |     |        |           |
|   ts | TIMESTAMP(3) *ROWTIME* | TRUE |     |        |           |
+------+------------------------+------+-----+--------+-----------+
2 rows in set
";
    assert!(out.contains(expected), "{out}");
    assert!(
        out.ends_with(
            "+------------+
| table name |
+------------+
|          s |
+------------+
1 row in set
Empty set
"
        ),
        "{out}"
    );
    let tables = "CREATE TABLE s (id BIGINT) WITH ('connector' = 'datagen');
         CREATE VIEW v AS SELECT id FROM s;";
    for (statement, says) in [
        (
            "DROP VIEW s;",
            "'s' is a table, not a view: DROP TABLE drops it",
        ),
        (
            "DROP TABLE v;",
            "'v' is a view, not a table: DROP VIEW drops it",
        ),
        ("DROP TABLE nope;", "table 'nope' not found"),
        ("DESCRIBE nope;", "table or view 'nope' not found"),
        ("SHOW FUNCTIONS;", "SHOW other than TABLES, VIEWS, CATALOGS"),
        (
            "DROP DATABASE d;",
            "DROP other than DROP TABLE, DROP VIEW or DROP FUNCTION",
        ),
    ] {
        fails_saying(&format!("{tables}\n{statement}"), says);
    }
    // A dropped table's name can be taken again.
    let again = run(&format!(
        "{tables}\nDROP VIEW v;\nCREATE VIEW v AS SELECT id * 2 AS twice FROM s;\nDESCRIBE v;"
    ))?;
    assert!(again.contains("| twice | BIGINT |"), "{again}");
    Ok(())
}

/// A session has one catalog and database, named as Flink's defaults:
/// names qualified by them are the unqualified ones, `USE` of them is
/// accepted, `SHOW` lists them; any other is named as unsupported.
#[test]
fn the_default_catalog_and_database_qualify_names() -> Result<(), SqlError> {
    let out = support::changelog(
        "CREATE TABLE default_catalog.default_database.Nums (id BIGINT)
           WITH ('connector' = 'datagen', 'number-of-rows' = '2',
                 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '2');
         USE CATALOG default_catalog; USE default_database;
         USE default_catalog.default_database;
         CREATE VIEW default_database.twice AS SELECT id * 2 AS id FROM nums;
         SELECT * FROM DEFAULT_CATALOG.default_database.twice;
         SELECT * FROM Nums;",
    )?;
    assert_eq!(out, ["+I[1]", "+I[2]", "+I[2]", "+I[4]"]);
    let listed = run(
        "CREATE TABLE default_database.t (id BIGINT) WITH ('connector' = 'datagen');
         SHOW TABLES; SHOW CATALOGS; SHOW DATABASES; SHOW CURRENT CATALOG;
         SHOW CURRENT DATABASE;",
    )?;
    for shown in [
        "|          t |",
        "| default_catalog |",
        "| default_database |",
        "| current catalog name |",
        "| current database name |",
    ] {
        assert!(listed.contains(shown), "{shown} in {listed}");
    }
    for (statement, says) in [
        (
            "USE CATALOG hive;",
            "USE CATALOG hive: Weir has one catalog and database",
        ),
        (
            "USE other_db;",
            "USE other_db: Weir has one catalog and database",
        ),
        (
            "CREATE TABLE hive.db.t (id BIGINT) WITH ('connector' = 'datagen');",
            "the name 'hive.db.t' in another catalog or database",
        ),
        (
            "CREATE VIEW db.v AS SELECT 1 AS x FROM t;",
            "the name 'db.v' in another catalog or database",
        ),
    ] {
        fails_saying(
            &format!("CREATE TABLE t (id BIGINT) WITH ('connector' = 'datagen');\n{statement}"),
            says,
        );
    }
    Ok(())
}

/// The 'raw' format reads a record as one STRING or BYTES column, and
/// says so of a table it cannot fill.
#[test]
fn a_raw_table_has_one_text_or_bytes_column() -> Result<(), SqlError> {
    let path = csv("raw", "a, b\n\nnull\n");
    let table = |columns: &str| {
        format!(
            "CREATE TABLE lines ({columns}) WITH ('connector' = 'filesystem', 'path' = '{}',
               'format' = 'raw');",
            path.display()
        )
    };
    let out = support::changelog(&format!(
        "{}\nSELECT line, CHAR_LENGTH(line) FROM lines;",
        table("line STRING")
    ))?;
    assert_eq!(out, ["+I[a, b, 4]", "+I[null, 4]"]);
    let out = support::changelog(&format!("{}\nSELECT line FROM lines;", table("line BYTES")))?;
    assert_eq!(out, ["+I[x'612c2062']", "+I[x'6e756c6c']"]);
    for columns in ["line STRING, n INT", "n INT"] {
        fails_saying(
            &format!("{}\nSELECT * FROM lines;", table(columns)),
            "the format 'raw' reads a table of one STRING or BYTES column",
        );
    }
    Ok(())
}

/// What `CREATE TABLE … LIKE` cannot merge is named: a feature both
/// tables declare while the base's is included, an unknown base or
/// option.
#[test]
fn a_like_that_cannot_merge_says_why() {
    let base = "CREATE TABLE base (id BIGINT, ts TIMESTAMP(3), twice AS id * 2,
           WATERMARK FOR ts AS ts, PRIMARY KEY (id) NOT ENFORCED)
         WITH ('connector' = 'datagen', 'number-of-rows' = '1');";
    for (statement, says) in [
        (
            "CREATE TABLE t (WATERMARK FOR ts AS ts) LIKE base;",
            "declares a WATERMARK that its LIKE base 'base' has too",
        ),
        (
            "CREATE TABLE t (PRIMARY KEY (ts) NOT ENFORCED) LIKE base;",
            "declares a PRIMARY KEY",
        ),
        (
            "CREATE TABLE t (twice AS id * 3) LIKE base (INCLUDING ALL);",
            "declares the column 'twice'",
        ),
        (
            "CREATE TABLE t WITH ('connector' = 'blackhole') LIKE base (INCLUDING ALL);",
            "declares the option 'connector'",
        ),
        ("CREATE TABLE t LIKE nope;", "LIKE 'nope': no such table"),
        (
            "CREATE TABLE t LIKE base (INCLUDING EVERYTHING);",
            "'EVERYTHING' is not a LIKE option",
        ),
        (
            "CREATE TABLE t LIKE base (OVERWRITING CONSTRAINTS);",
            "OVERWRITING CONSTRAINTS: only GENERATED",
        ),
    ] {
        fails_saying(&format!("{base}\n{statement}"), says);
    }
    // Overwritten or excluded, each declares its own.
    let out = run(&format!(
        "{base}
         CREATE TABLE t (twice AS id * 3, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
           WITH ('connector' = 'blackhole')
           LIKE base (OVERWRITING GENERATED OVERWRITING WATERMARKS EXCLUDING CONSTRAINTS);
         DESCRIBE t;"
    ))
    .expect("merged");
    assert!(
        out.contains("| twice |") && out.contains("AS id * 3") && !out.contains("PRI("),
        "{out}"
    );
}

/// `SHOW CREATE TABLE` prints a statement that makes the same table again
/// (its `DESCRIBE` the same); `SHOW CREATE VIEW` a view's query.
#[test]
fn show_create_table_prints_a_statement_that_makes_it_again() -> Result<(), SqlError> {
    let table = "CREATE TABLE s (id BIGINT NOT NULL, name STRING, ts TIMESTAMP(3),
           twice AS id * 2, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND,
           PRIMARY KEY (id) NOT ENFORCED)
         WITH ('connector' = 'datagen', 'number-of-rows' = '3', 'fields.name.length' = '4');";
    let shown = run(&format!("{table}\nSHOW CREATE TABLE s;"))?;
    let statement = shown
        .split_once("CREATE TABLE `default_catalog`")
        .map(|(_, rest)| format!("CREATE TABLE `default_catalog`{rest}"))
        .unwrap_or_else(|| panic!("{shown}"));
    let described = |script: &str| -> Result<String, SqlError> {
        let out = run(&format!("{script}\nDESCRIBE s;"))?;
        Ok(out
            .lines()
            .filter(|l| l.starts_with('|'))
            .collect::<Vec<_>>()
            .join("\n"))
    };
    assert_eq!(
        described(&format!("{statement};"))?,
        described(table)?,
        "{statement}"
    );
    assert!(
        statement.contains("'fields.name.length' = '4'"),
        "{statement}"
    );
    let view = run(&format!(
        "{table}\nCREATE VIEW v AS SELECT id FROM s WHERE id > 1;\nSHOW CREATE VIEW v;"
    ))?;
    assert!(view.contains("CREATE VIEW `default_catalog`.`default_database`.`v` AS\nSELECT id FROM s WHERE id > 1"), "{view}");
    fails_saying(
        &format!("{table}\nSHOW CREATE VIEW s;"),
        "'s' is a table: SHOW CREATE TABLE shows it",
    );
    Ok(())
}

/// `ALTER TABLE` renames a table, sets options and resets them; the
/// table reads as altered, and what cannot be altered is named.
#[test]
fn alter_table_renames_and_sets_options() -> Result<(), SqlError> {
    let table = "CREATE TABLE s (id BIGINT) WITH ('connector' = 'datagen',
           'number-of-rows' = '5', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
           'fields.id.end' = '5');";
    let out = support::changelog(&format!(
        "{table}
         ALTER TABLE s RENAME TO nums;
         ALTER TABLE nums SET ('fields.id.end' = '2', 'number-of-rows' = '2');
         SELECT * FROM nums;"
    ))?;
    assert_eq!(out, ["+I[1]", "+I[2]"]);
    let shown = run(&format!(
        "{table}
         ALTER TABLE s RESET ('number-of-rows');
         SHOW CREATE TABLE s;"
    ))?;
    assert!(
        !shown.contains("number-of-rows") && shown.contains("'fields.id.end' = '5'"),
        "{shown}"
    );
    for (statement, says) in [
        (
            "ALTER TABLE s RENAME TO v;",
            "a table or view 'v' exists already",
        ),
        ("ALTER TABLE v SET ('a' = 'b');", "table 'v' not found"),
        (
            "ALTER TABLE s RESET ('connector');",
            "a table needs its connector",
        ),
        (
            "ALTER TABLE s ADD x INT;",
            "ALTER TABLE other than RENAME TO",
        ),
        ("ALTER VIEW v RENAME TO w;", "ALTER other than ALTER TABLE"),
    ] {
        fails_saying(
            &format!("{table}\nCREATE VIEW v AS SELECT id FROM s;\n{statement}"),
            says,
        );
    }
    // The old name is gone.
    fails_saying(
        &format!("{table}\nALTER TABLE s RENAME TO t;\nSELECT * FROM s;"),
        "table or view 's' not found",
    );
    Ok(())
}

/// `SHOW USER FUNCTIONS` lists the session's functions and `DROP
/// FUNCTION` removes one; a query then calling it is refused.
#[test]
fn user_functions_are_listed_and_dropped() -> Result<(), SqlError> {
    let create = "CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';";
    let out = run(&format!(
        "SHOW USER FUNCTIONS;\n{create}\nSHOW USER FUNCTIONS;"
    ))?;
    assert!(out.starts_with("Empty set\n"), "{out}");
    assert!(out.contains("|    count_char |"), "{out}");
    let dropped = run(&format!(
        "{create}\nDROP TEMPORARY SYSTEM FUNCTION count_char;\nDROP FUNCTION IF EXISTS count_char;\nSHOW USER FUNCTIONS;"
    ))?;
    assert!(dropped.ends_with("Empty set\n"), "{dropped}");
    fails_saying("DROP FUNCTION nope;", "function 'nope' not found");
    fails_saying(
        &format!(
            "{create}\nDROP FUNCTION count_char;
             CREATE TABLE s (t STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '1');
             SELECT count_char(t, 'a') FROM s;"
        ),
        "the function COUNT_CHAR",
    );
    Ok(())
}

/// `INSERT INTO t (columns)`: the query's values land in the columns
/// listed, the others are NULL (rows as Flink 2.3 writes them); a column
/// the table lacks, or one listed twice, is named before any job runs.
#[test]
fn an_insert_with_a_column_list_fills_the_others_with_null() -> Result<(), SqlError> {
    let path = csv("insert-columns", ORDERS);
    let dir = std::env::temp_dir().join(format!("weir-sql-insert-columns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let table = |name: &str| {
        format!(
            "CREATE TABLE {name} (id BIGINT, buyer STRING, amount DECIMAL(10, 2), note STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.null-literal' = '');",
            dir.display()
        )
    };
    let script = format!(
        "{}\n{}\nINSERT INTO written (amount, `id`) SELECT amount, id FROM orders WHERE id < 3;
         INSERT INTO written (note, buyer, id) VALUES ('hand-written', 'zoe', 99);
         {}\nSELECT * FROM back;",
        orders_ddl(&path),
        table("written"),
        table("back")
    );
    assert_eq!(
        support::changelog(&script)?,
        [
            "+I[1, NULL, 12.50, NULL]",
            "+I[2, NULL, 3.00, NULL]",
            "+I[99, zoe, NULL, hand-written]"
        ]
    );
    let sink = format!("{}\n{}", orders_ddl(&path), table("written"));
    fails_saying(
        &format!("{sink}\nINSERT INTO written (id, nope) SELECT id, id FROM orders;"),
        "table 'written' has no column 'nope' to insert into (its columns: id, buyer, amount, note)",
    );
    fails_saying(
        &format!("{sink}\nINSERT INTO written (id, ID) SELECT id, id FROM orders;"),
        "column 'ID' is listed twice",
    );
    fails_saying(
        &format!("{sink}\nINSERT INTO written (id, buyer) SELECT id FROM orders;"),
        "names 2 columns, but its query has 1",
    );
    Ok(())
}

/// `CREATE … IF NOT EXISTS` leaves an existing table or view as it was;
/// without it, a second CREATE fails.
#[test]
fn create_if_not_exists_keeps_what_exists() -> Result<(), SqlError> {
    let path = csv("if-not-exists", ORDERS);
    let script = format!(
        "{}\nCREATE TABLE IF NOT EXISTS orders (x INT) WITH ('connector' = 'datagen');
         CREATE VIEW v AS SELECT id FROM orders WHERE id > 3;
         CREATE VIEW IF NOT EXISTS v AS SELECT id FROM orders;
         CREATE TEMPORARY VIEW IF NOT EXISTS w (n) AS SELECT id FROM v;
         SELECT * FROM w;",
        orders_ddl(&path)
    );
    assert_eq!(support::changelog(&script)?, ["+I[4]"]);
    fails_saying(
        &format!(
            "{}\nCREATE TABLE orders (x INT) WITH ('connector' = 'datagen');",
            orders_ddl(&path)
        ),
        "a table or view 'orders' exists already",
    );
    Ok(())
}

/// A common table expression is a name for its query within one
/// statement: mistakes in it are named, WITH RECURSIVE is refused, and the
/// name is gone after the statement.
#[test]
fn common_table_expression_mistakes_are_named() {
    let path = csv("cte-mistakes", ORDERS);
    let ddl = orders_ddl(&path);
    fails_saying(
        &format!("{ddl}\nWITH c (a, b) AS (SELECT id FROM orders) SELECT * FROM c;"),
        "c names 2 columns, but its query has 1",
    );
    fails_saying(
        &format!("{ddl}\nWITH RECURSIVE c AS (SELECT id FROM orders) SELECT * FROM c;"),
        "WITH RECURSIVE",
    );
    fails_saying(
        &format!("{ddl}\nWITH c AS (SELECT id FROM orders) SELECT * FROM c;\nSELECT * FROM c;"),
        "table or view 'c' not found",
    );
    fails_saying(
        &format!("{ddl}\nWITH c AS (SELECT nope FROM orders) SELECT * FROM c;"),
        "nope",
    );
}

/// Subqueries Weir cannot run as a semi or anti join, and set operations
/// of different columns, are named before any job runs.
#[test]
fn subquery_mistakes_are_named() {
    let path = csv("subquery-mistakes", ORDERS);
    let ddl = format!(
        "{}\nCREATE TABLE payments (order_id BIGINT, kind STRING)
         WITH ('connector' = 'datagen', 'number-of-rows' = '3');",
        orders_ddl(&path)
    );
    for (query, says) in [
        (
            "SELECT id FROM orders WHERE id IN (SELECT order_id, kind FROM payments);",
            "an IN subquery gives one column; this one gives 2",
        ),
        (
            "SELECT id FROM orders WHERE buyer IN (SELECT order_id FROM payments);",
            "IN compares STRING with a subquery of BIGINT",
        ),
        (
            "SELECT id FROM orders WHERE EXISTS (SELECT order_id FROM payments GROUP BY order_id);",
            "not supported: an EXISTS subquery other than SELECT … FROM one table or view",
        ),
        (
            "SELECT id FROM orders WHERE id > 3 OR id IN (SELECT order_id FROM payments);",
            "not supported: the expression id IN (SELECT order_id FROM payments)",
        ),
        (
            "SELECT id FROM orders EXCEPT SELECT kind FROM payments;",
            "EXCEPT of different columns: (BIGINT) and (STRING)",
        ),
        (
            "SELECT id FROM orders o WHERE EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.nope);",
            "column 'nope' not found",
        ),
    ] {
        fails_saying(&format!("{ddl}\n{query}"), says);
    }
}

/// `SET;` lists the session's settings as Flink's client does; `RESET 'k'`
/// drops one, `RESET;` all of them.
#[test]
fn set_lists_the_settings_and_reset_drops_them() -> Result<(), SqlError> {
    let out = run("SET 'parallelism.default' = '2';
         SET 'table.exec.state.ttl' = '1 h';
         SET;
         RESET 'parallelism.default';
         SET;
         RESET;
         SET;")?;
    let tables: Vec<&str> = out.split("[INFO] Execute statement succeeded.\n").collect();
    assert!(
        tables[2].contains("|  parallelism.default |     2 |")
            && tables[2].contains("| table.exec.state.ttl |   1 h |"),
        "{out}"
    );
    assert!(
        !tables[3].contains("parallelism.default") && tables[3].contains("table.exec.state.ttl"),
        "{out}"
    );
    assert!(tables[4].contains("Empty set"), "{out}");
    Ok(())
}
