//! Configuration from the command line and files.

use weir::prelude::*;

#[test]
fn from_args_sets_parallelism_and_leaves_job_arguments() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::from_args_iter([
        "-p",
        "3",
        "-D",
        "pipeline.max-parallelism=64",
        "--input",
        "x.txt",
    ])?;
    assert_eq!(env.get_parallelism(), 3);
    assert_eq!(env.get_max_parallelism(), 64);
    assert_eq!(env.args().get("input"), Some("x.txt"));
    Ok(())
}

#[test]
fn a_config_file_is_read_and_flags_override_it() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("config.yaml");
    std::fs::write(
        &file,
        "parallelism:\n  default: 2\npipeline:\n  max-parallelism: 32\nexecution.buffer-timeout.interval: 5 ms\n",
    )?;
    let path = file.to_string_lossy().to_string();
    let env = StreamExecutionEnvironment::from_args_iter(["--config", path.as_str()])?;
    assert_eq!(env.get_parallelism(), 2);
    assert_eq!(env.get_max_parallelism(), 32);
    let env = StreamExecutionEnvironment::from_args_iter(["--config", path.as_str(), "-p", "4"])?;
    assert_eq!(env.get_parallelism(), 4);
    // Code overrides both.
    env.set_parallelism(1);
    assert_eq!(env.get_parallelism(), 1);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn a_missing_config_file_names_the_path() {
    let err = StreamExecutionEnvironment::from_args_iter(["--config", "/nonexistent/weir.yaml"])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("/nonexistent/weir.yaml"), "{err}");
}

#[test]
fn a_bad_value_is_a_configuration_error() {
    let result = StreamExecutionEnvironment::from_args_iter(["-D", "parallelism.default=lots"]);
    assert!(matches!(result, Err(weir::Error::Config(_))));
}

#[test]
fn savepoint_path_is_kept_for_restore() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::from_args_iter(["--from-savepoint", "/sp/savepoint-1"])?;
    assert_eq!(
        env.from_savepoint().as_deref(),
        Some(std::path::Path::new("/sp/savepoint-1"))
    );
    Ok(())
}
