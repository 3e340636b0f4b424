//! Starting a job's REST API from its configuration (`rest.port` and
//! friends), as `weir run` asks for it. The port is bound before the job
//! starts, so that a setting that cannot be honoured fails the job before
//! any record flows; the server starts serving once the job runs.

use weir_runtime::cluster::JobClient;

use crate::config::{keys, Configuration};
use crate::error::{Error, Result};

/// Whether the configuration asks for a REST API.
pub(crate) fn configured(config: &Configuration) -> bool {
    config.get(keys::REST_PORT).is_some() || config.get(keys::REST_BIND_PORT).is_some()
}

/// The REST API's port, bound and not yet serving.
#[cfg(feature = "web")]
pub(crate) struct BoundRest(weir_web::RestListener);

#[cfg(not(feature = "web"))]
pub(crate) struct BoundRest;

/// Binds the configured port, if one is configured.
#[cfg(feature = "web")]
pub(crate) fn bind(config: &Configuration) -> Result<Option<BoundRest>> {
    use weir_web::{RestConfig, RestListener};

    let Some(port) = config
        .get(keys::REST_BIND_PORT)
        .or_else(|| config.get(keys::REST_PORT))
    else {
        return Ok(None);
    };
    let port: u16 = port
        .trim()
        .parse()
        .map_err(|_| Error::Config(format!("{}: '{port}' is not a port", keys::REST_PORT)))?;
    let rest = RestConfig {
        bind_address: config
            .get(keys::REST_BIND_ADDRESS)
            .or_else(|| config.get(keys::REST_ADDRESS))
            .unwrap_or("127.0.0.1")
            .trim()
            .to_string(),
        port,
        token: config.get(keys::REST_TOKEN).map(str::to_string),
        archive_dir: Some(
            config
                .get(keys::ARCHIVE_DIR)
                .map(|d| std::path::PathBuf::from(d.trim().trim_start_matches("file://")))
                .unwrap_or_else(weir_web::archive::default_dir),
        ),
    };
    RestListener::bind(&rest)
        .map(|l| Some(BoundRest(l)))
        .map_err(|e| Error::Config(e.to_string()))
}

/// Serves `client`'s job on the port bound by [`bind`] until the job ends;
/// announces the address on stderr (`weir run` reads it).
#[cfg(feature = "web")]
pub(crate) fn serve(
    client: &mut JobClient,
    bound: BoundRest,
    config: &Configuration,
) -> Result<()> {
    use weir_web::RestServer;

    let settings = config
        .iter()
        .filter(|(k, _)| *k != keys::REST_TOKEN)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let server = RestServer::serve(bound.0, client.view(), settings)
        .map_err(|e| Error::Config(e.to_string()))?;
    tracing::info!(
        job_id = %client.job_id(),
        address = %server.local_addr(),
        "job {} REST API at http://{}",
        client.job_id(),
        server.local_addr()
    );
    client.set_rest_address(server.local_addr());
    client.keep_until_end(Box::new(server));
    Ok(())
}

/// Without the `web` feature a configured port is an error, not ignored.
#[cfg(not(feature = "web"))]
pub(crate) fn bind(config: &Configuration) -> Result<Option<BoundRest>> {
    if configured(config) {
        return Err(Error::Config(
            "rest.port: this build has no REST API; build weir with the 'web' feature".into(),
        ));
    }
    Ok(None)
}

#[cfg(not(feature = "web"))]
pub(crate) fn serve(
    _client: &mut JobClient,
    _bound: BoundRest,
    _config: &Configuration,
) -> Result<()> {
    Ok(())
}
