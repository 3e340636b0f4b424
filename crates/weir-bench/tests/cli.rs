//! The bench binary's command line: help, and unknown names.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weir-bench"))
}

#[test]
fn help_lists_every_benchmark_job_and_query() {
    for flag in ["--help", "-h"] {
        let out = bench().arg(flag).output().expect("weir-bench runs");
        assert!(out.status.success(), "{flag}: {:?}", out.status);
        let text = String::from_utf8_lossy(&out.stdout);
        for wanted in [
            "nexmark",
            "tumbling",
            "rocksdb-value-state-1m",
            "q15",
            "--events",
        ] {
            assert!(text.contains(wanted), "{flag}: no {wanted} in\n{text}");
        }
    }
    let out = bench()
        .args(["nexmark", "--help"])
        .output()
        .expect("weir-bench runs");
    assert!(out.status.success());
}

#[test]
fn unknown_names_are_errors_that_name_them() {
    let out = bench().arg("windowz").output().expect("weir-bench runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown benchmark 'windowz'"), "{err}");

    let out = bench()
        .args(["job", "--name", "tumblin", "--events", "10"])
        .output()
        .expect("weir-bench runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown job tumblin; one of chained"), "{err}");
}

#[test]
fn the_sql_pool_is_written_for_another_engine_to_replay() {
    let dir = std::env::temp_dir().join(format!("weir-bench-pool-{}", std::process::id()));
    let out = bench()
        .args(["sql", "--write-pool"])
        .arg(&dir)
        .args(["--pool", "120"])
        .output()
        .expect("weir-bench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = |name: &str| -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(dir.join(name)).expect("the file is written");
        text.lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    };
    // 120 events round up to 150: three epochs of one person, three
    // auctions and 46 bids, with the SQL tables' columns.
    let (people, auctions, bids) = (lines("person.tsv"), lines("auction.tsv"), lines("bid.tsv"));
    assert_eq!((people.len(), auctions.len(), bids.len()), (3, 9, 138));
    assert!(people.iter().all(|f| f.len() == 8));
    assert!(auctions.iter().all(|f| f.len() == 10));
    assert!(bids.iter().all(|f| f.len() == 7));
    assert_eq!(people[0][0], "1000", "the first person's id");
    // A pass adds as many people and auctions as the pool holds.
    let step = std::fs::read_to_string(dir.join("pool.txt")).expect("pool.txt is written");
    assert!(step.starts_with("3 9 "), "{step}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_sql_script_of_a_query_writes_its_select_into_a_blackhole() {
    let out = bench()
        .args(["sql", "--script", "q2", "--events", "1000", "--pool", "500"])
        .output()
        .expect("weir-bench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = String::from_utf8_lossy(&out.stdout);
    for wanted in [
        "'events.num' = '1000', 'pool.size' = '500'",
        "CREATE TABLE sink (auction BIGINT, price BIGINT) WITH ('connector' = 'blackhole');",
        "INSERT INTO sink\nSELECT auction, price FROM bid",
    ] {
        assert!(script.contains(wanted), "no {wanted} in\n{script}");
    }
    let out = bench()
        .args(["sql", "--script", "q99"])
        .output()
        .expect("weir-bench runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no SQL query q99 (known: q0, q1"), "{err}");
}
