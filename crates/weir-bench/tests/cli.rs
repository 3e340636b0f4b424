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
