//! `weir checkpoint inspect` over a checkpoint written the way the
//! coordinator writes one.

use std::path::PathBuf;
use std::process::Command;

use weir_state::checkpoint_storage::{
    encode_metadata, state_file, CheckpointMetadata, OperatorMetadata,
};
use weir_state::snapshot::{encode_framed, KeyedStateSnapshot};
use weir_state::{CheckpointStorage, FsCheckpointStorage, SavepointStorage, SubtaskSnapshot};

fn write_checkpoint(dir: &PathBuf) -> PathBuf {
    write_checkpoint_numbered(dir, 7, 1_700_000_000_000)
}

/// Checkpoint `id` of job `abab…` under `dir`, taken at `at` ms.
fn write_checkpoint_numbered(dir: &PathBuf, id: u64, at: i64) -> PathBuf {
    write_checkpoint_to(FsCheckpointStorage::new(dir), id, at, false)
}

/// Checkpoint (or savepoint) `id` of job `abab…` into `storage`.
fn write_checkpoint_to(
    storage: impl CheckpointStorage,
    id: u64,
    at: i64,
    savepoint: bool,
) -> PathBuf {
    let mut snapshot = SubtaskSnapshot::default();
    snapshot.add_state(KeyedStateSnapshot {
        name: "count".into(),
        entries: vec![(3, vec![1], vec![2]), (9, vec![4], vec![5])],
    });
    let bytes = encode_framed(&snapshot).expect("encode");
    storage.write_file(id, "op1-0", &bytes).expect("write");
    let metadata = CheckpointMetadata {
        job_id: "ab".repeat(16),
        checkpoint_id: id,
        timestamp_ms: at,
        savepoint,
        max_parallelism: 128,
        operators: vec![OperatorMetadata {
            id: "counts".into(),
            name: "Map".into(),
            parallelism: 1,
            files: vec![state_file(0, (0, 127), "op1-0".into(), &bytes)],
        }],
    };
    storage
        .write_metadata(id, &encode_metadata(&metadata).expect("encode"))
        .expect("write");
    PathBuf::from(storage.location(id).trim_start_matches("file://"))
}

fn inspect(path: &std::path::Path) -> (bool, String, String) {
    weir_checkpoint("inspect", &[path.to_str().expect("utf-8")])
}

/// `weir checkpoint COMMAND ARGS…`: success, stdout, stderr.
fn weir_checkpoint(command: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["checkpoint", command])
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn inspect_prints_operators_states_and_verified_files() {
    let dir = std::env::temp_dir().join(format!("weir-cli-inspect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let chk = write_checkpoint(&dir);
    let (ok, stdout, stderr) = inspect(&chk);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("checkpoint 7 of job abab"), "{stdout}");
    assert!(
        stdout.contains("operator 'Map' (id counts), parallelism 1"),
        "{stdout}"
    );
    assert!(stdout.contains("key groups 0-127"), "{stdout}");
    assert!(
        stdout.contains("keyed state 'count': 2 entries"),
        "{stdout}"
    );
    assert!(stdout.contains("1 files verified"), "{stdout}");
    // The job's directory works too: its newest checkpoint.
    let (ok, stdout, _) = inspect(&dir);
    assert!(ok && stdout.contains("checkpoint 7"), "{stdout}");

    // A flipped byte fails verification, naming the file.
    let file = chk.join("op1-0");
    let mut bytes = std::fs::read(&file).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&file, bytes).expect("write");
    let (ok, _, stderr) = inspect(&chk);
    assert!(!ok);
    assert!(stderr.contains("op1-0"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dispose_deletes_savepoints_and_refuses_checkpoints() {
    let dir = std::env::temp_dir().join(format!("weir-cli-dispose-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let chk = write_checkpoint(&dir);
    let dispose = |path: &PathBuf| {
        Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["savepoint", "--dispose"])
            .arg(path)
            .output()
            .expect("runs")
    };
    let refused = dispose(&chk);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a savepoint"));
    assert!(chk.exists());

    // The same files marked as a savepoint go.
    let meta = chk.join("_metadata");
    let mut metadata: weir_state::CheckpointMetadata =
        weir_state::snapshot::decode_framed(&std::fs::read(&meta).expect("read")).expect("decode");
    metadata.savepoint = true;
    std::fs::write(&meta, encode_metadata(&metadata).expect("encode")).expect("write");
    let done = dispose(&chk);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(!chk.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

fn weir_list(args: &[&str]) -> (bool, String, String) {
    weir_checkpoint("list", args)
}

#[test]
fn list_shows_every_checkpoint_newest_first_and_latest_skips_what_does_not_verify() {
    let root = std::env::temp_dir().join(format!("weir-cli-list-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let job = root.join("ab".repeat(16));
    let older = write_checkpoint_numbered(&job, 7, 1_700_000_000_000);
    let newer = write_checkpoint_numbered(&job, 8, 1_700_000_060_000);
    // The newest is corrupt: a state file changed after it was written.
    std::fs::write(newer.join("op1-0"), b"not what was written").expect("corrupt");
    // And one was begun but never completed.
    std::fs::create_dir_all(job.join("chk-9")).expect("dir");
    std::fs::write(job.join("chk-9").join("op1-0"), b"partial").expect("write");
    let (ok, stdout, stderr) = weir_list(&[root.to_str().expect("utf-8")]);
    assert!(ok, "{stderr}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("abab")).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(
        rows[1].contains(" 8 ") && rows[1].contains("does not verify"),
        "{stdout}"
    );
    assert!(
        rows[2].contains(" 7 ") && rows[2].contains("complete, verifies"),
        "{stdout}"
    );
    // 2023-11-14 22:13:20 UTC, in local time as `weir list` prints dates.
    assert!(
        rows[2].contains("14.11.2023 ") || rows[2].contains("15.11.2023 "),
        "{stdout}"
    );
    assert!(stdout.contains("incomplete"), "{stdout}");
    // --latest: the path to resume from, the newest that verifies.
    let (ok, stdout, stderr) = weir_list(&[root.to_str().expect("utf-8"), "--latest"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), older.display().to_string());
    // Nothing to resume from: a failure, said.
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let (ok, _, stderr) = weir_list(&[empty.to_str().expect("utf-8"), "--latest"]);
    assert!(!ok);
    assert!(stderr.contains("no complete checkpoint"), "{stderr}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The same commands on a bucket of a local S3 server, reached through
/// the AWS environment variables.
#[test]
fn list_inspect_and_dispose_work_on_a_bucket() {
    let s3 =
        weir_state::file_system::LocalS3::start("weir-cli-s3").unwrap_or_else(|e| panic!("{e}"));
    let root = s3.uri("checkpoints");
    let job = format!("{root}/{}", "ab".repeat(16));
    let storage = || FsCheckpointStorage::open(&job).expect("storage");
    write_checkpoint_to(storage(), 7, 1_700_000_000_000, false);
    write_checkpoint_to(storage(), 8, 1_700_000_060_000, false);
    let object = s3
        .bucket_dir()
        .join("checkpoints")
        .join("ab".repeat(16))
        .join("chk-8")
        .join("op1-0");
    std::fs::write(&object, b"not what was written").expect("corrupt");
    // Begun, never completed: objects without `_metadata`.
    let partial = object.parent().expect("chk-8").with_file_name("chk-9");
    std::fs::create_dir_all(&partial).expect("dir");
    std::fs::write(partial.join("op1-0"), b"partial").expect("write");
    let savepoint = s3.uri("savepoints/savepoint-abab-1");
    write_checkpoint_to(
        SavepointStorage::open(&savepoint).expect("savepoint storage"),
        9,
        1_700_000_120_000,
        true,
    );
    let weir = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(args)
            .envs(s3.env())
            .output()
            .expect("runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let bucket = s3.uri("");
    let (ok, stdout, stderr) = weir(&["checkpoint", "list", &bucket]);
    assert!(ok, "{stderr}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("abab")).collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    assert!(
        rows.iter()
            .any(|r| r.contains(" 9 ") && r.contains("incomplete")),
        "{stdout}"
    );
    assert!(
        rows.iter()
            .any(|r| r.contains("savepoint") && r.contains("complete, verifies")),
        "{stdout}"
    );
    assert!(
        rows.iter()
            .any(|r| r.contains(" 8 ") && r.contains("does not verify")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("{job}/chk-7")), "{stdout}");
    let (ok, stdout, stderr) = weir(&["checkpoint", "list", &root, "--latest"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), format!("{job}/chk-7"));
    let (ok, stdout, stderr) = weir(&["checkpoint", "inspect", &job]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("skipped checkpoint 8"), "{stdout}");
    assert!(stdout.contains("checkpoint 7 of job abab"), "{stdout}");
    assert!(stdout.contains("files verified"), "{stdout}");
    let (ok, _, stderr) = weir(&["savepoint", "--dispose", &format!("{job}/chk-7")]);
    assert!(!ok && stderr.contains("not a savepoint"), "{stderr}");
    let (ok, _, stderr) = weir(&["savepoint", "--dispose", &savepoint]);
    assert!(ok, "{stderr}");
    assert!(!s3
        .bucket_dir()
        .join("savepoints/savepoint-abab-1/_metadata")
        .exists());
    assert!(s3
        .bucket_dir()
        .join("checkpoints")
        .join("ab".repeat(16))
        .join("chk-7")
        .exists());
}
