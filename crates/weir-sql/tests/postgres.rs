//! PostgreSQL tables as sinks, against a throwaway local server: an
//! updating query upserted on the table's key, an insert-only one
//! inserted; mistakes named before any job runs.

#![cfg(feature = "postgres")]

use std::path::PathBuf;

use weir_connectors::postgres::{execute, LocalPostgres};
use weir_sql::SqlError;

mod support;

fn orders_ddl() -> String {
    format!(
        "CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');",
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/orders.csv")
            .display()
    )
}

/// The rows of `query` on the server, as text.
fn rows(url: &str, query: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connects");
    client
        .query(query, &[])
        .expect("query")
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| {
                    r.get::<_, Option<String>>(i)
                        .unwrap_or_else(|| "NULL".into())
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

#[test]
fn queries_upsert_on_the_key_or_insert() -> Result<(), SqlError> {
    let server = LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    execute(
        &url,
        "CREATE TABLE totals (buyer TEXT PRIMARY KEY, n BIGINT, total NUMERIC(10, 2));
         CREATE TABLE big (id BIGINT, buyer TEXT, at TIMESTAMP);",
    )
    .expect("tables");
    let jdbc = url.replacen("postgres://", "jdbc:postgresql://", 1);
    support::run_with(
        &format!(
            "{}
             CREATE TABLE totals (buyer STRING, n BIGINT, total DECIMAL(10, 2),
               PRIMARY KEY (buyer) NOT ENFORCED)
               WITH ('connector' = 'jdbc', 'url' = '{jdbc}', 'table-name' = 'totals');
             INSERT INTO totals SELECT buyer, COUNT(*), SUM(amount) FROM orders GROUP BY buyer;
             CREATE TABLE big (id BIGINT, buyer STRING, at TIMESTAMP(3))
               WITH ('connector' = 'postgres', 'url' = '{url}', 'table-name' = 'big',
                     'sink.delivery-guarantee' = 'exactly-once');
             INSERT INTO big SELECT id, buyer, ts FROM orders WHERE amount > 4;",
            orders_ddl()
        ),
        &[],
    )?;
    // Each buyer's final result, once (the updates replaced it in place).
    assert_eq!(
        rows(
            &url,
            "SELECT buyer, n::text, total::text FROM totals ORDER BY buyer"
        ),
        [
            "alice, 4, 60.75",
            "bob, 3, 10.00",
            "carol, 2, 3.30",
            "dave, 1, 0.10"
        ]
    );
    assert_eq!(
        rows(
            &url,
            "SELECT id::text, buyer, at::text FROM big ORDER BY id"
        ),
        [
            "1, alice, 2020-04-15 08:00:01",
            "3, alice, 2020-04-15 08:00:07",
            "7, bob, 2020-04-15 08:00:21",
            "9, alice, 2020-04-15 08:00:09"
        ]
    );
    Ok(())
}

/// Retractions reach the table: a `-D` deletes its key's row, and so does
/// a `-U` whose `+U` the query filtered out (`HAVING`), at least once or
/// exactly once.
#[test]
fn deletes_and_retractions_remove_rows() -> Result<(), SqlError> {
    let server = LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    execute(
        &url,
        "CREATE TABLE once (buyer TEXT PRIMARY KEY, n BIGINT);
         CREATE TABLE spread (n BIGINT PRIMARY KEY, buyers BIGINT);",
    )
    .expect("tables");
    support::run_with(
        &format!(
            "{}
             CREATE TABLE once (buyer STRING, n BIGINT, PRIMARY KEY (buyer) NOT ENFORCED)
               WITH ('connector' = 'postgres', 'url' = '{url}', 'table-name' = 'once');
             INSERT INTO once SELECT buyer, COUNT(*) FROM orders GROUP BY buyer HAVING COUNT(*) < 2;
             CREATE TABLE spread (n BIGINT, buyers BIGINT, PRIMARY KEY (n) NOT ENFORCED)
               WITH ('connector' = 'postgres', 'url' = '{url}', 'table-name' = 'spread',
                     'sink.delivery-guarantee' = 'exactly-once');
             INSERT INTO spread SELECT n, COUNT(*) FROM (
               SELECT buyer, COUNT(*) AS n FROM orders WHERE id <= 9 GROUP BY buyer
             ) GROUP BY n;",
            orders_ddl()
        ),
        &[],
    )?;
    // Only dave has a single order in the end; the others' rows were
    // taken back when their second order came.
    assert_eq!(
        rows(&url, "SELECT buyer, n::text FROM once ORDER BY buyer"),
        ["dave, 1"]
    );
    // Without order 10 carol and dave have one order, bob three, alice
    // four: the group of two orders (bob's for a while) was deleted.
    assert_eq!(
        rows(&url, "SELECT n::text, buyers::text FROM spread ORDER BY n"),
        ["1, 2", "3, 1", "4, 1"]
    );
    Ok(())
}

/// A PostgreSQL table read as a source: each type from PostgreSQL's text,
/// NULLs, a key's order, and a join with a file's rows.
#[test]
fn tables_are_read_as_sources() -> Result<(), SqlError> {
    let server = LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    execute(
        &url,
        "CREATE TABLE buyers (name TEXT PRIMARY KEY, vip BOOLEAN, since DATE,
           seen TIMESTAMP, seen_utc TIMESTAMPTZ, score DOUBLE PRECISION,
           credit NUMERIC(10, 2), tag BYTEA, visits BIGINT);
         INSERT INTO buyers VALUES
           ('carol', false, '2019-01-02', '2020-04-15 08:00:00.123456',
            '2020-04-15 10:00:00+02', 0.5, 3.10, '\\x0aff', 7),
           ('alice', true, '2018-12-31', '2020-04-15 07:59:59', NULL, 1.25,
            100.00, NULL, NULL),
           ('bob', NULL, NULL, NULL, '2020-04-15 08:00:00+00', NULL, NULL, '\\x', 2);",
    )
    .expect("table");
    let jdbc = url.replacen("postgres://", "jdbc:postgresql://", 1);
    let buyers = format!(
        "CREATE TABLE buyers (name STRING, vip BOOLEAN, since DATE, seen TIMESTAMP(3),
           seen_utc TIMESTAMP_LTZ(3), score DOUBLE, credit DECIMAL(10, 2), tag BYTES,
           visits BIGINT, PRIMARY KEY (name) NOT ENFORCED)
           WITH ('connector' = 'jdbc', 'url' = '{jdbc}', 'table-name' = 'buyers',
                 'sink.buffer-flush.max-rows' = '10');"
    );
    let out = support::changelog(&format!(
        "{buyers}
         SELECT name, vip, since, seen, seen_utc, score, credit, tag, visits FROM buyers;"
    ))?;
    // In the key's order; carol's `10:00+02` is 08:00 UTC.
    assert_eq!(
        out,
        [
            "+I[alice, TRUE, 2018-12-31, 2020-04-15 07:59:59.000, NULL, 1.25, 100.00, NULL, NULL]",
            "+I[bob, NULL, NULL, NULL, 2020-04-15 08:00:00.000, NULL, NULL, x'', 2]",
            "+I[carol, FALSE, 2019-01-02, 2020-04-15 08:00:00.123, 2020-04-15 08:00:00.000, 0.5, 3.10, x'0aff', 7]"
        ]
    );
    // Joined with a file's rows; COUNT(*) reads no column of the table.
    let out = support::changelog(&format!(
        "{}
         {buyers}
         SELECT o.id, b.visits FROM orders AS o JOIN buyers AS b ON o.buyer = b.name
         WHERE b.vip IS NOT NULL;
         SELECT COUNT(*) AS n FROM buyers;",
        orders_ddl()
    ))?;
    let mut joined: Vec<&String> = out.iter().filter(|r| r.contains(", ")).collect();
    joined.sort();
    assert_eq!(
        joined,
        [
            "+I[1, NULL]",
            "+I[10, 7]",
            "+I[3, NULL]",
            "+I[4, 7]",
            "+I[5, NULL]",
            "+I[9, NULL]"
        ]
    );
    let counts: Vec<String> = out.iter().filter(|r| !r.contains(", ")).cloned().collect();
    assert_eq!(support::materialize(&counts), ["[3]"]);
    Ok(())
}

#[test]
fn jdbc_table_mistakes_are_named() {
    let err = |table: &str, query: &str| {
        support::run_with(&format!("{}\n{table}\n{query}", orders_ddl()), &[])
            .unwrap_err()
            .to_string()
    };
    let e = err(
        "CREATE TABLE t (buyer STRING, n BIGINT) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1:1/x', 'table-name' = 't');",
        "INSERT INTO t SELECT buyer, COUNT(*) FROM orders GROUP BY buyer;",
    );
    assert!(e.contains("the jdbc sink takes inserts only"), "{e}");
    let e = err(
        "CREATE TABLE t (buyer STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://127.0.0.1/x', 'table-name' = 't');",
        "INSERT INTO t SELECT buyer FROM orders;",
    );
    assert!(e.contains("'url' must be jdbc:postgresql://"), "{e}");
    let e = err(
        "CREATE TABLE t (buyer STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1/x');",
        "INSERT INTO t SELECT buyer FROM orders;",
    );
    assert!(e.contains("the option 'table-name' is missing"), "{e}");
}

/// Lookup joins: each order joined, as it arrives, with the rows the
/// server holds for its keys (a computed column of the table computed on
/// them), through the table's cache or without one; a `LEFT JOIN` pads
/// orders that find no row, or only rows the `ON`'s other conditions
/// fail; an `INT` column is looked up by a `BIGINT`, past a computed
/// column declared before it.
#[test]
fn lookup_joins_read_the_rows_of_each_key() -> Result<(), SqlError> {
    let server = LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    execute(
        &url,
        "CREATE TABLE customers (name TEXT PRIMARY KEY, city TEXT, since TIMESTAMP);
         INSERT INTO customers VALUES ('alice', 'Berlin', '2019-01-01 10:00:00'),
           ('bob', 'Paris', NULL), ('carol', NULL, '2020-01-01 00:00:00');
         CREATE TABLE notes (order_id INT, note TEXT);
         INSERT INTO notes VALUES (3, 'gift'), (3, 'rush'), (8, 'late'), (11, 'none');",
    )
    .expect("tables");
    let jdbc = url.replacen("postgres://", "jdbc:postgresql://", 1);
    let tables = |cache: &str| {
        format!(
            "CREATE TABLE clicks (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
               pt AS PROCTIME())
               WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                     'csv.null-literal' = 'null');
             CREATE TABLE customers (name STRING, city STRING, since TIMESTAMP(3),
               shout AS UPPER(city), PRIMARY KEY (name) NOT ENFORCED)
               WITH ('connector' = 'jdbc', 'url' = '{jdbc}', 'table-name' = 'customers'{cache});
             CREATE TABLE notes (long_note AS CHAR_LENGTH(note) > 4, order_id INT, note STRING)
               WITH ('connector' = 'postgres', 'url' = '{url}', 'table-name' = 'notes'{cache});",
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/golden/orders.csv")
                .display()
        )
    };
    let queries = "
         SELECT o.id, c.city, c.shout, c.since
         FROM clicks AS o JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.buyer = c.name;
         SELECT o.id, o.buyer, c.city
         FROM clicks AS o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c
           ON c.name = o.buyer AND c.city <> 'Paris'
         WHERE o.id > 5;
         SELECT o.id, n.note, n.long_note
         FROM clicks AS o JOIN notes FOR SYSTEM_TIME AS OF o.pt AS n ON o.id = n.order_id;";
    let expected = [
        "+I[1, Berlin, BERLIN, 2019-01-01 10:00:00.000]",
        "+I[10, NULL, NULL, 2020-01-01 00:00:00.000]",
        "+I[10, carol, NULL]",
        "+I[2, Paris, PARIS, NULL]",
        "+I[3, Berlin, BERLIN, 2019-01-01 10:00:00.000]",
        "+I[3, gift, FALSE]",
        "+I[3, rush, FALSE]",
        "+I[4, NULL, NULL, 2020-01-01 00:00:00.000]",
        "+I[5, Berlin, BERLIN, 2019-01-01 10:00:00.000]",
        "+I[6, Paris, PARIS, NULL]",
        "+I[6, bob, NULL]",
        "+I[7, Paris, PARIS, NULL]",
        "+I[7, bob, NULL]",
        "+I[8, dave, NULL]",
        "+I[8, late, FALSE]",
        "+I[9, Berlin, BERLIN, 2019-01-01 10:00:00.000]",
        "+I[9, alice, Berlin]",
    ];
    let caches = [
        "",
        ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '2',
           'lookup.partial-cache.expire-after-write' = '1 min'",
        ", 'lookup.cache.max-rows' = '100', 'lookup.cache.ttl' = '10 s',
           'lookup.cache.caching-missing-key' = 'false', 'lookup.max-retries' = '1'",
    ];
    for cache in caches {
        let mut out = support::changelog(&format!("{}{queries}", tables(cache)))?;
        out.sort();
        assert_eq!(out, expected, "with {cache:?}");
    }
    Ok(())
}

/// A lookup join Weir cannot run is named before any row flows; a table
/// the server does not have fails the job as it starts.
#[test]
fn lookup_join_mistakes_are_named() {
    let server = LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    execute(
        &url,
        "CREATE TABLE customers (name TEXT, city TEXT, visits DOUBLE PRECISION);",
    )
    .expect("table");
    let clicks = format!(
        "CREATE TABLE clicks (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
           pt AS PROCTIME())
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');",
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/orders.csv")
            .display()
    );
    let err = |table: &str, options: &str, on: &str| {
        support::run_with(
            &format!(
                "{clicks}
                 CREATE TABLE customers (name STRING, city STRING, visits DOUBLE)
                   WITH ('connector' = 'postgres', 'url' = '{url}', 'table-name' = '{table}'{options});
                 SELECT o.id, c.city FROM clicks AS o
                   JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON {on};"
            ),
            &[],
        )
        .map(|out| panic!("ran, printing {out}"))
        .unwrap_err()
        .to_string()
    };
    let cases = [
        ("nowhere", "", "o.buyer = c.name", "nowhere"),
        (
            "customers",
            ", 'lookup.cache' = 'FULL'",
            "o.buyer = c.name",
            "'lookup.cache' = 'FULL': NONE or PARTIAL",
        ),
        (
            "customers",
            ", 'lookup.cache' = 'PARTIAL'",
            "o.buyer = c.name",
            "needs 'lookup.partial-cache.max-rows'",
        ),
        (
            "customers",
            ", 'lookup.cache.ttl' = '1 s'",
            "o.buyer = c.name",
            "'lookup.cache.max-rows' and 'lookup.cache.ttl' go together",
        ),
        (
            "customers",
            "",
            "o.id = c.name",
            "cannot compare BIGINT with STRING",
        ),
        (
            "customers",
            "",
            "o.id = c.visits",
            "the lookup key o.id = c.visits equals a DOUBLE column to a value of type BIGINT: CAST one",
        ),
        (
            "customers",
            "",
            "c.city <> o.buyer",
            "a lookup join needs an equality between the left side and a column of `c`",
        ),
    ];
    for (table, options, on, says) in cases {
        let e = err(table, options, on);
        assert!(e.contains(says), "{e}");
    }
    // Not a lookup source.
    let e = support::run_with(
        &format!(
            "{clicks}
             CREATE TABLE plain (name STRING, city STRING)
               WITH ('connector' = 'filesystem', 'path' = '/nonexistent', 'format' = 'csv');
             SELECT o.id FROM clicks AS o
               JOIN plain FOR SYSTEM_TIME AS OF o.pt AS c ON o.buyer = c.name;"
        ),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("looks rows up in a lookup source, a 'jdbc' or 'postgres' table"),
        "{e}"
    );
}
