//! Checkpoints on an S3-compatible object store (a local server started by
//! each test, one bucket each): written, listed, verified and restored
//! from the bucket on both state backends, at another parallelism, past a
//! corrupt object, and across an outage of the server.

use std::time::{Duration, Instant};

use weir::prelude::*;
use weir_state::checkpoint_storage::{load_path, FsCheckpointStorage};
use weir_state::file_system::LocalS3;
use weir_state::CheckpointStorage;

use crate::checkpoints::{counting_job, max_per_key, KEYS};

fn server(bucket: &str) -> LocalS3 {
    LocalS3::start(bucket).unwrap_or_else(|e| panic!("{e}"))
}

fn configure(env: &StreamExecutionEnvironment, backend: &str, dir: &str, p: u32) {
    env.set_parallelism(p);
    let mut c = Configuration::new();
    c.set("state.backend.type", backend)
        .set("execution.checkpointing.interval", "50 ms")
        .set("execution.checkpointing.dir", dir)
        .set("execution.checkpointing.num-retained", "3")
        .set(
            "execution.checkpointing.externalized-checkpoint-retention",
            "RETAIN_ON_CANCELLATION",
        );
    env.configure(&c).expect("config");
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn backends() -> &'static [&'static str] {
    if cfg!(feature = "rocksdb") {
        &["hashmap", "rocksdb"]
    } else {
        &["hashmap"]
    }
}

/// A job checkpoints into the bucket and is cancelled; a new job restores
/// from the job's directory there at another parallelism and counts every
/// key exactly to its total. RocksDB's checkpoints are incremental: SST
/// files are uploaded once to the job's `shared/` prefix and referenced.
/// A corrupt object in the newest checkpoint makes restore take the one
/// before.
#[test]
fn checkpoints_on_s3_restore_at_another_parallelism_on_both_backends() {
    for backend in backends() {
        let s3 = server(&format!("weir-it-{backend}"));
        let dir = s3.uri("checkpoints");
        let records = 30_000;
        let env = StreamExecutionEnvironment::new();
        configure(&env, backend, &dir, 2);
        counting_job(&env, records, 2_000.0, None);
        let client = env.execute_async("to s3").expect("starts");
        let job = client.job_id().to_string();
        let view = client.view();
        wait_for("three checkpoints", || view.checkpoints().completed >= 3);
        client.cancel();
        assert!(client.wait().is_err(), "cancelled");

        let job_dir = format!("{dir}/{job}");
        let storage = FsCheckpointStorage::open(&job_dir).expect("storage");
        let ids = storage.completed().expect("listing");
        assert!(ids.len() >= 2, "{backend}: {ids:?}");
        let on_server = s3.bucket_dir().join("checkpoints").join(&job);
        assert!(on_server
            .join(format!("chk-{}", ids[0]))
            .join("_metadata")
            .is_file());
        if *backend == "rocksdb" {
            let on_server: std::collections::BTreeSet<String> =
                std::fs::read_dir(on_server.join("shared"))
                    .expect("shared objects")
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
            assert!(
                !on_server.is_empty(),
                "RocksDB's SST files are shared objects"
            );
            let referenced: std::collections::BTreeSet<String> = ids
                .iter()
                .flat_map(|id| {
                    let meta = weir_state::checkpoint_storage::load_metadata(&storage, *id)
                        .expect("metadata");
                    meta.operators
                        .into_iter()
                        .flat_map(|o| o.files)
                        .flat_map(|f| f.shared)
                        .collect::<Vec<_>>()
                })
                .collect();
            // Uploaded once, referenced by the retained checkpoints, and
            // those no retained checkpoint uses deleted.
            assert_eq!(on_server, referenced, "shared objects");
        }

        let env = StreamExecutionEnvironment::new();
        configure(&env, backend, &dir, 3);
        env.set_from_savepoint(&job_dir);
        let out = counting_job(&env, records, 1e9, None);
        let result = env.execute("from s3").expect("resumes");
        assert_eq!(
            result.checkpoints.restored,
            ids.last().copied(),
            "{backend}: the newest checkpoint"
        );
        let resumed = out.lock().expect("lock");
        assert!(
            (resumed.len() as u64) < records,
            "{backend}: it started over"
        );
        let max = max_per_key(resumed.iter());
        assert_eq!(max.len() as u64, KEYS);
        assert!(
            max.values().all(|m| *m == records / KEYS),
            "{backend}: p=2 -> p=3: {max:?}"
        );

        // A flipped byte in the newest checkpoint's state object.
        let newest = *ids.last().expect("one");
        let chk = on_server.join(format!("chk-{newest}"));
        let victim = std::fs::read_dir(&chk)
            .expect("checkpoint objects")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().is_some_and(|n| n != "_metadata"))
            .expect("a state object");
        let mut bytes = std::fs::read(&victim).expect("object");
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
        std::fs::write(&victim, bytes).expect("corrupt it");
        // What a process killed mid-upload leaves: state objects of a
        // newer checkpoint, no `_metadata`. Not a checkpoint to restore.
        let partial = storage.location(newest + 1);
        weir_state::file_system::open(&partial)
            .and_then(|fs| fs.write("op1-0", b"half"))
            .expect("partial upload");
        assert_eq!(storage.completed().expect("listing"), ids);
        let (loaded, skipped) = load_path(std::path::Path::new(&job_dir)).expect("one verifies");
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].0, newest);
        assert!(
            skipped[0].1.to_string().contains("checksum"),
            "{:?}",
            skipped[0].1
        );
        assert_eq!(loaded.metadata.checkpoint_id, ids[ids.len() - 2]);
        assert!(loaded.location.starts_with("s3://"), "{}", loaded.location);
    }
}

/// With the server down, checkpoints fail (tolerated) while the job keeps
/// processing; when it is back, checkpoints complete again, and the job's
/// result is exact.
#[test]
fn checkpoints_fail_while_s3_is_down_and_the_job_goes_on() {
    let mut s3 = server("weir-it-outage");
    let records = 40_000;
    let env = StreamExecutionEnvironment::new();
    configure(&env, "hashmap", &s3.uri("checkpoints"), 1);
    let mut c = Configuration::new();
    c.set(
        "execution.checkpointing.tolerable-failed-checkpoints",
        "1000",
    );
    env.configure(&c).expect("config");
    env.set_restart_strategy(RestartStrategy::None);
    // 20 s of input: the outage comes and goes while it flows.
    let out = counting_job(&env, records, 2_000.0, None);
    let client = env.execute_async("outage").expect("starts");
    let view = client.view();
    wait_for("a checkpoint", || view.checkpoints().completed >= 1);
    s3.stop();
    let failed_before = view.checkpoints().failed;
    wait_for("a failed checkpoint", || {
        view.checkpoints().failed > failed_before
    });
    let completed_during = view.checkpoints().completed;
    let processed_during = out.lock().expect("lock").len();
    s3.restart().unwrap_or_else(|e| panic!("{e}"));
    wait_for("a checkpoint after the outage", || {
        view.checkpoints().completed > completed_during
    });
    let result = client.wait().expect("the job went on");
    assert!(result.checkpoints.failed >= 1, "{:?}", result.checkpoints);
    let out = out.lock().expect("lock");
    assert!(
        out.len() > processed_during,
        "records flowed after the outage"
    );
    let max = max_per_key(out.iter());
    assert!(max.values().all(|m| *m == records / KEYS), "{max:?}");
}

/// A savepoint asked for through the REST API lands in the bucket as one
/// self-contained prefix (RocksDB's files copied in), and a new job
/// resumes from it at another parallelism.
#[test]
fn a_savepoint_through_the_rest_api_goes_to_s3_and_resumes() {
    use weir_web::{RestClient, SavepointStatus};
    let s3 = server("weir-it-savepoints");
    let backend = backends().last().copied().unwrap_or("hashmap");
    let records = 30_000;
    let env = StreamExecutionEnvironment::new();
    configure(&env, backend, &s3.uri("checkpoints"), 2);
    let mut c = Configuration::new();
    c.set("rest.port", "0");
    env.configure(&c).expect("config");
    counting_job(&env, records, 2_000.0, None);
    let client = env.execute_async("savepoint to s3").expect("starts");
    let view = client.view();
    wait_for("a checkpoint", || view.checkpoints().completed >= 1);
    let id = client.job_id().to_string();
    let port = client.rest_address().expect("REST").port();
    let rest = RestClient::new(&format!("127.0.0.1:{port}"), None);
    let trigger = rest
        .trigger_savepoint(&id, Some(&s3.uri("savepoints")))
        .expect("triggered");
    let mut status = SavepointStatus::InProgress;
    wait_for("the savepoint", || {
        status = rest.savepoint_status(&id, &trigger).expect("status");
        status != SavepointStatus::InProgress
    });
    let SavepointStatus::Completed(location) = status else {
        panic!("the savepoint failed: {status:?}");
    };
    assert!(
        location.starts_with("s3://weir-it-savepoints/savepoints/savepoint-"),
        "{location}"
    );
    let key = location.trim_start_matches("s3://weir-it-savepoints/");
    assert!(s3.bucket_dir().join(key).join("_metadata").is_file());
    // A bad target is refused before anything is written.
    assert!(rest.trigger_savepoint(&id, Some("s4://nowhere")).is_err());
    client.cancel();
    let _ = client.wait();

    let env = StreamExecutionEnvironment::new();
    configure(&env, backend, &s3.uri("checkpoints"), 3);
    env.set_from_savepoint(&location);
    let out = counting_job(&env, records, 1e9, None);
    let result = env.execute("from the savepoint").expect("resumes");
    assert!(result.checkpoints.restored.is_some());
    let resumed = out.lock().expect("lock");
    assert!((resumed.len() as u64) < records, "it started over");
    let max = max_per_key(resumed.iter());
    assert_eq!(max.len() as u64, KEYS);
    assert!(max.values().all(|m| *m == records / KEYS), "{max:?}");
}
