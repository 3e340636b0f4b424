//! How the process reaches object stores for checkpoints and savepoints:
//! Flink's `s3.*` keys, applied once per process as Flink initialises its
//! file systems. Unset keys fall back to the standard AWS environment
//! variables.

use crate::config::Configuration;
use crate::error::Result;

/// The keys read.
pub mod keys {
    /// Access key id.
    pub const ACCESS_KEY: &str = "s3.access-key";
    /// Secret access key.
    pub const SECRET_KEY: &str = "s3.secret-key";
    /// Endpoint of an S3-compatible server (`http://127.0.0.1:9000`).
    pub const ENDPOINT: &str = "s3.endpoint";
    /// Bucket in the path instead of the host name (default: true when an
    /// endpoint is set).
    pub const PATH_STYLE: &str = "s3.path.style.access";
    /// Region (default `us-east-1`, or `AWS_REGION`).
    pub const REGION: &str = "s3.region";
    /// Weir's own: time limit of one request (default `60 s`).
    pub const REQUEST_TIMEOUT: &str = "weir.s3.request-timeout";
    /// Weir's own: retries of a failed request, with backoff (default 3).
    pub const MAX_RETRIES: &str = "weir.s3.max-retries";
    /// Every key of this module.
    pub const ALL: [&str; 7] = [
        ACCESS_KEY,
        SECRET_KEY,
        ENDPOINT,
        PATH_STYLE,
        REGION,
        REQUEST_TIMEOUT,
        MAX_RETRIES,
    ];
}

/// Applies the `s3.*` keys of `config` to the process, if any is set.
pub(crate) fn apply(config: &Configuration) -> Result<()> {
    if !keys::ALL.iter().any(|k| config.get(k).is_some()) {
        return Ok(());
    }
    configure(config)
}

#[cfg(feature = "s3")]
fn configure(config: &Configuration) -> Result<()> {
    let text = |key: &str| config.get(key).map(|v| v.trim().to_string());
    let path_style = config.get_bool(keys::PATH_STYLE)?;
    weir_state::file_system::configure_s3(weir_state::file_system::S3Options {
        access_key: text(keys::ACCESS_KEY),
        secret_key: text(keys::SECRET_KEY),
        endpoint: text(keys::ENDPOINT),
        region: text(keys::REGION),
        path_style,
        request_timeout: config.get_duration(keys::REQUEST_TIMEOUT)?,
        max_retries: config.get_u32(keys::MAX_RETRIES)?.map(|n| n as usize),
    });
    Ok(())
}

#[cfg(not(feature = "s3"))]
fn configure(_config: &Configuration) -> Result<()> {
    Err(crate::error::Error::Config(
        "s3.* keys are set, but this build of Weir has no S3 support (feature `s3`)".into(),
    ))
}
