//! Starting a job's REST API from its configuration (`rest.port` and
//! friends), as `weir run` asks for it.

use weir_runtime::cluster::JobClient;

use crate::config::{keys, Configuration};
use crate::error::{Error, Result};

/// Whether the configuration asks for a REST API.
pub(crate) fn configured(config: &Configuration) -> bool {
    config.get(keys::REST_PORT).is_some() || config.get(keys::REST_BIND_PORT).is_some()
}

/// Serves `client`'s job on the configured port, if one is configured,
/// until the job ends; announces the address on stderr (`weir run` reads
/// it).
#[cfg(feature = "web")]
pub(crate) fn serve(client: &mut JobClient, config: &Configuration) -> Result<()> {
    use weir_web::{RestConfig, RestServer};

    let Some(port) = config
        .get(keys::REST_BIND_PORT)
        .or_else(|| config.get(keys::REST_PORT))
    else {
        return Ok(());
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
    };
    let settings = config
        .iter()
        .filter(|(k, _)| *k != keys::REST_TOKEN)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let server = RestServer::start(&rest, client.view(), settings)
        .map_err(|e| Error::Config(e.to_string()))?;
    eprintln!(
        "weir: job {} REST API at http://{}",
        client.job_id(),
        server.local_addr()
    );
    client.keep_until_end(Box::new(server));
    Ok(())
}

/// Without the `web` feature a configured port is an error, not ignored.
#[cfg(not(feature = "web"))]
pub(crate) fn serve(_client: &mut JobClient, config: &Configuration) -> Result<()> {
    if configured(config) {
        return Err(Error::Config(
            "rest.port: this build has no REST API; build weir with the 'web' feature".into(),
        ));
    }
    Ok(())
}
