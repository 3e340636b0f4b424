//! Scripts run end to end: CSV files in, changelog tables out.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use weir_sql::{Session, SqlError};

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

fn csv(name: &str, content: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-sql-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.csv"));
    std::fs::write(&path, content).expect("write csv");
    path
}

fn run(script: &str) -> Result<String, SqlError> {
    let out = Captured::default();
    let mut session = Session::with_output(Box::new(out.clone()));
    session.execute_script(script)?;
    Ok(out.text())
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
         ) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
        path.display()
    )
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
    assert!(err("SELECT id FROM orders GROUP BY id;").contains("not supported: GROUP BY"));
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
fn a_bad_line_fails_the_job_and_says_which() {
    let path = csv(
        "bad",
        "1,alice,12.50,2020-04-15 08:00:01\n2,bob,lots,2020-04-15 08:00:04\n",
    );
    let e = run(&format!("{}\nSELECT id FROM orders;", orders_ddl(&path)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'lots' is not a valid DECIMAL(10, 2)"), "{e}");
    assert!(e.contains("2,bob,lots"), "{e}");
}
