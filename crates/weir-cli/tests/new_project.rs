//! `weir new`: the project it writes builds, its test passes, and its job
//! runs, as a new user would try it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn weir() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weir"))
}

/// The workspace's target directory (this test runs from `target/debug/deps`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors()
        .nth(3)
        .expect("the target directory")
        .to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the command runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn a_new_project_builds_tests_and_runs() {
    let dir = std::env::temp_dir().join(format!("weir-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let said = run(weir().args(["new", "my-job", "--dir"]).arg(&dir));
    assert!(said.contains("cargo test"), "{said}");
    let project = dir.join("my-job");
    // The workspace's lock file: the same versions as the tree it came
    // from, nothing to fetch.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::copy(workspace.join("Cargo.lock"), project.join("Cargo.lock")).expect("lock");
    // Its own target directory: this test's cargo holds the workspace's.
    let target = target_dir().join("weir-new-project");
    let cargo = || {
        let mut c = Command::new(env!("CARGO"));
        c.current_dir(&project)
            .env("CARGO_TARGET_DIR", &target)
            // A second build of weir and its dependencies: without debug
            // info or incremental caches it takes a fraction of the disk.
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_INCREMENTAL", "0")
            .arg("--offline");
        c
    };
    let tested = run(cargo().args(["test", "--quiet"]));
    assert!(tested.contains("1 passed"), "{tested}");
    std::fs::write(project.join("words.txt"), "to be or not to be\n").expect("input");
    let counted = run(cargo().args(["run", "--quiet", "--", "--input", "words.txt"]));
    assert_eq!(counted, "(to,1)\n(be,1)\n(or,1)\n(not,1)\n(to,2)\n(be,2)\n");

    // A second project of the same name is refused, not overwritten.
    let out = weir()
        .args(["new", "my-job", "--dir"])
        .arg(&dir)
        .output()
        .expect("weir runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists already"));
    let _ = std::fs::remove_dir_all(&dir);
}
