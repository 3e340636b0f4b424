//! `weir checkpoint inspect` over a checkpoint written the way the
//! coordinator writes one.

use std::path::PathBuf;
use std::process::Command;

use weir_state::checkpoint_storage::{
    encode_metadata, state_file, CheckpointMetadata, OperatorMetadata,
};
use weir_state::snapshot::{encode_framed, KeyedStateSnapshot};
use weir_state::{CheckpointStorage, FsCheckpointStorage, SubtaskSnapshot};

fn write_checkpoint(dir: &PathBuf) -> PathBuf {
    let storage = FsCheckpointStorage::new(dir);
    let mut snapshot = SubtaskSnapshot::default();
    snapshot.add_state(KeyedStateSnapshot {
        name: "count".into(),
        entries: vec![(3, vec![1], vec![2]), (9, vec![4], vec![5])],
    });
    let bytes = encode_framed(&snapshot).expect("encode");
    storage.write_file(7, "op1-0", &bytes).expect("write");
    let metadata = CheckpointMetadata {
        job_id: "ab".repeat(16),
        checkpoint_id: 7,
        timestamp_ms: 1_700_000_000_000,
        savepoint: false,
        max_parallelism: 128,
        operators: vec![OperatorMetadata {
            id: "counts".into(),
            name: "Map".into(),
            parallelism: 1,
            files: vec![state_file(0, (0, 127), "op1-0".into(), &bytes)],
        }],
    };
    storage
        .write_metadata(7, &encode_metadata(&metadata).expect("encode"))
        .expect("write");
    storage.checkpoint_dir(7)
}

fn inspect(path: &PathBuf) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["checkpoint", "inspect"])
        .arg(path)
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
