//! PostgreSQL sinks through whole jobs: upserts and two-phase commit,
//! across failures, against a local server.

use std::collections::BTreeMap;
use std::time::Duration;

use weir::prelude::*;

use crate::FailAfterCheckpoint;
use weir_connectors::postgres::{LocalPostgres, PostgresSink, Row};

const KEYS: u64 = 40;

fn server() -> LocalPostgres {
    LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"))
}

fn client(pg: &LocalPostgres) -> postgres::Client {
    postgres::Client::connect(&pg.url(), postgres::NoTls).expect("connects")
}

/// 0..records at `records` a second (a second of input, checkpoints every
/// 40 ms), failing once after a checkpoint at `fail_at` if given.
fn numbers(
    env: &StreamExecutionEnvironment,
    records: u64,
    fail_at: Option<u64>,
) -> DataStream<u64> {
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_millis(40))
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    env.add_parallel_source(
        GeneratorSource::new(records, |i| i).with_rate_limit(records as f64),
        "numbers",
    )
    .uid("numbers")
    .map(fail_at.map_or_else(FailAfterCheckpoint::never, FailAfterCheckpoint::at))
    .uid("fail once")
}

#[test]
fn upserts_leave_each_keys_final_row_across_a_failure() {
    let pg = server();
    let mut db = client(&pg);
    db.batch_execute("CREATE TABLE totals (k BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
        .expect("table");
    let records = 20_000;
    let env = StreamExecutionEnvironment::new();
    numbers(&env, records, Some(12_000))
        .map(|i: u64| (i % KEYS, 1u64))
        .key_by(|p| p.0)
        .sum(|p| &mut p.1)
        .uid("totals")
        .add_sink(
            PostgresSink::upsert(
                &pg.url(),
                "totals",
                &["k", "n"],
                &["k"],
                |(k, n): &(u64, u64)| -> Row { vec![Box::new(*k as i64), Box::new(*n as i64)] },
            )
            .with_batch_size(100),
        );
    let result = env.execute("upserts").expect("recovers");
    assert_eq!(result.restarts, 1, "{:?}", result.recovered_failures);
    let rows: BTreeMap<i64, i64> = db
        .query("SELECT k, n FROM totals", &[])
        .expect("query")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    // Every key's count, computed plainly.
    let expected: BTreeMap<i64, i64> = (0..KEYS as i64)
        .map(|k| (k, (records / KEYS) as i64))
        .collect();
    assert_eq!(rows, expected);
}

/// The rows of `table` as `(i, n)`, and how many prepared transactions
/// are left on the server.
fn inserted(db: &mut postgres::Client, table: &str) -> (Vec<(i64, i64)>, i64) {
    let rows = db
        .query(&format!("SELECT i, n FROM {table} ORDER BY i, n"), &[])
        .expect("query")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let prepared: i64 = db
        .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
        .expect("count")
        .get(0);
    (rows, prepared)
}

#[test]
fn two_phase_commit_writes_each_row_once_across_a_failure() {
    let pg = server();
    let mut db = client(&pg);
    db.batch_execute("CREATE TABLE seen (i BIGINT NOT NULL, n BIGINT NOT NULL)")
        .expect("table");
    // A transaction of another run of this sink, prepared for a checkpoint
    // this job never restored: left over, it must be rolled back.
    db.batch_execute(
        "BEGIN; INSERT INTO seen VALUES (-1, -1); \
         PREPARE TRANSACTION 'weir:seen:an-old-run.0:5:0'",
    )
    .expect("a leftover");
    let records = 20_000;
    let env = StreamExecutionEnvironment::new();
    numbers(&env, records, Some(12_000))
        .add_sink(PostgresSink::exactly_once(
            &pg.url(),
            "seen",
            &["i", "n"],
            &[],
            |i: &u64| -> Row { vec![Box::new(*i as i64), Box::new(1i64)] },
        ))
        .uid("seen");
    let result = env.execute("exactly once").expect("recovers");
    assert_eq!(result.restarts, 1, "{:?}", result.recovered_failures);
    assert!(result.checkpoints.restored.is_some());
    let (rows, prepared) = inserted(&mut db, "seen");
    // Plain inserts, no key: a row written twice would be there twice.
    let expected: Vec<(i64, i64)> = (0..records as i64).map(|i| (i, 1)).collect();
    assert_eq!(rows.len(), expected.len());
    assert_eq!(rows, expected);
    assert_eq!(prepared, 0, "prepared transactions left on the server");
}

#[test]
fn an_unreachable_server_fails_the_job_naming_it() {
    // A port bound here but not listened on: connections are refused,
    // and nobody else can take it meanwhile.
    let held =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind");
    let port = held
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("an IP address")
        .port();
    let url = format!("postgres://weir:secret@127.0.0.1:{port}/none");
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1u64]).add_sink(PostgresSink::upsert(
        &url,
        "t",
        &["k"],
        &["k"],
        |k: &u64| -> Row { vec![Box::new(*k as i64)] },
    ));
    let err = env
        .execute("unreachable")
        .expect_err("no server")
        .to_string();
    assert!(
        err.contains(&format!(
            "cannot connect to PostgreSQL at postgres://weir:***@127.0.0.1:{port}/none"
        )),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
}

#[test]
fn a_row_that_does_not_fit_the_table_fails_the_job_with_the_servers_reason() {
    let pg = server();
    let mut db = client(&pg);
    db.batch_execute("CREATE TABLE strict (k BIGINT PRIMARY KEY, v TEXT NOT NULL)")
        .expect("table");
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1u64]).add_sink(PostgresSink::upsert(
        &pg.url(),
        "strict",
        &["k", "v"],
        &["k"],
        |k: &u64| -> Row { vec![Box::new(*k as i64), Box::new(None::<String>)] },
    ));
    let err = env.execute("null").expect_err("not null").to_string();
    assert!(err.contains("writing rows into strict"), "{err}");
    assert!(err.contains("null value in column"), "{err}");
}

#[test]
fn a_server_lost_mid_run_and_back_loses_and_repeats_nothing() {
    let mut pg = server();
    let mut db = client(&pg);
    db.batch_execute("CREATE TABLE seen (i BIGINT NOT NULL, n BIGINT NOT NULL)")
        .expect("table");
    drop(db);
    let records = 12_000u64;
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_millis(40))
        // Attempts fail while the server is down; it is back within 3 s.
        .set_restart_strategy(RestartStrategy::fixed_delay(50, Duration::from_millis(200)));
    env.add_parallel_source(
        GeneratorSource::new(records, |i| i).with_rate_limit(3_000.0),
        "numbers",
    )
    .uid("numbers")
    .add_sink(PostgresSink::exactly_once(
        &pg.url(),
        "seen",
        &["i", "n"],
        &[],
        |i: &u64| -> Row { vec![Box::new(*i as i64), Box::new(1i64)] },
    ))
    .uid("seen");
    let job = env.execute_async("outage").expect("starts");
    std::thread::sleep(Duration::from_millis(1_000));
    pg.stop();
    std::thread::sleep(Duration::from_millis(1_500));
    pg.restart().expect("the server comes back");
    let result = job.wait().expect("the job comes back with the server");
    assert!(result.restarts >= 1, "the outage failed the job");
    let mut db = client(&pg);
    let (rows, prepared) = inserted(&mut db, "seen");
    let expected: Vec<(i64, i64)> = (0..records as i64).map(|i| (i, 1)).collect();
    assert_eq!(rows.len(), expected.len());
    assert_eq!(rows, expected);
    assert_eq!(prepared, 0, "prepared transactions left on the server");
}

#[derive(Debug, Clone, serde::Serialize)]
struct Total {
    k: String,
    total: i64,
    ratio: f64,
    note: Option<String>,
    done: bool,
}

#[test]
fn rows_from_a_serde_type_take_the_fields_of_the_columns_names() {
    let pg = server();
    let mut db = client(&pg);
    db.batch_execute(
        "CREATE TABLE totals (k TEXT PRIMARY KEY, total BIGINT NOT NULL, \
         ratio DOUBLE PRECISION, note TEXT, done BOOLEAN); \
         CREATE TABLE copied (LIKE totals)",
    )
    .expect("tables");
    let totals = vec![
        Total {
            k: "a".into(),
            total: 1,
            ratio: 0.5,
            note: None,
            done: false,
        },
        Total {
            k: "b".into(),
            total: 2,
            ratio: 1.5,
            note: Some("x, \"y\"".into()),
            done: true,
        },
        // The same key again: the last row wins.
        Total {
            k: "a".into(),
            total: 3,
            ratio: 2.5,
            note: Some("again".into()),
            done: true,
        },
    ];
    let columns = ["k", "total", "ratio", "note", "done"];
    let env = StreamExecutionEnvironment::new();
    let stream = env.from_collection(totals);
    stream.add_sink(PostgresSink::upsert_serde(
        &pg.url(),
        "totals",
        &columns,
        &["k"],
    ));
    stream.add_sink(PostgresSink::exactly_once_serde(
        &pg.url(),
        "copied",
        &columns,
        &[],
    ));
    env.execute("serde rows").expect("writes");
    type Line = (String, i64, f64, Option<String>, bool);
    let rows = |db: &mut postgres::Client, table: &str| -> Vec<Line> {
        db.query(
            &format!("SELECT k, total, ratio, note, done FROM {table} ORDER BY k, total"),
            &[],
        )
        .expect("query")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect()
    };
    assert_eq!(
        rows(&mut db, "totals"),
        vec![
            ("a".to_string(), 3, 2.5, Some("again".to_string()), true),
            ("b".to_string(), 2, 1.5, Some("x, \"y\"".to_string()), true),
        ]
    );
    assert_eq!(rows(&mut db, "copied").len(), 3);
}

/// A table scan emits every row as text in the key's order; restored from
/// a position, it skips the rows emitted before it.
#[test]
fn a_scan_resumes_after_the_rows_it_emitted() -> Result<(), Box<dyn std::error::Error + Send + Sync>>
{
    use weir::functions::{SourceContext, SourceFunction, SourceStatus};
    use weir_connectors::postgres::PostgresSource;
    let pg = server();
    let mut db = client(&pg);
    db.batch_execute(
        "CREATE TABLE scanned (k BIGINT PRIMARY KEY, v TEXT);
         INSERT INTO scanned SELECT n, CASE WHEN n % 2 = 0 THEN 'v' || n END
         FROM generate_series(5, 1, -1) AS n;",
    )?;
    let poll = |source: &mut PostgresSource, limit: usize| {
        let mut records = Vec::new();
        let status = source.poll_next(&mut SourceContext::new(&mut records, limit));
        let values: Vec<Vec<Option<String>>> = records.into_iter().map(|r| r.value).collect();
        (values, status)
    };
    let mut source = PostgresSource::text(&pg.url(), "scanned", &["k", "v"], &["k"])?;
    let (first, status) = poll(&mut source, 2);
    assert!(matches!(status, Ok(SourceStatus::More)));
    assert_eq!(
        first,
        [
            vec![Some("1".to_string()), None],
            vec![Some("2".to_string()), Some("v2".to_string())]
        ]
    );
    let position = source.snapshot_position(1)?.expect("a scan has a position");
    // A new source, as after a failure, from that position.
    let mut restored = PostgresSource::text(&pg.url(), "scanned", &["k", "v"], &["k"])?;
    restored.restore_position(&position)?;
    let (rest, status) = poll(&mut restored, 10);
    assert!(matches!(status, Ok(SourceStatus::Finished)));
    let keys: Vec<Option<String>> = rest.into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(keys, [Some("3".into()), Some("4".into()), Some("5".into())]);
    Ok(())
}
