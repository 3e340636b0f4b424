//! A PostgreSQL table read as a bounded source (Flink's JDBC scan
//! source): one query through a server-side cursor, fetched a batch per
//! poll, each row as its columns' text (`NULL` as `None`). The position in
//! a checkpoint is the number of rows emitted; a restored source declares
//! the cursor again and skips that many. With `order_by` (the table's key)
//! the order, and so the rows skipped, is the same on every run; without
//! it, PostgreSQL's scan order, which is stable only while the table does
//! not change.

use std::sync::Mutex;

use postgres::Client;
use weir::functions::{FunctionResult, SourceContext, SourceFunction, SourceStatus};

use super::{connect, identifier, PostgresSinkError};

/// Rows fetched per round trip (at most what a poll can emit).
const FETCH: usize = 1000;

/// The source ([`PostgresSource::text`]).
pub struct PostgresSource {
    url: String,
    query: String,
    /// Rows emitted so far.
    emitted: u64,
    /// In a mutex only to be `Sync`, as sources must be (the subtask owns
    /// it and reaches it without locking).
    client: Mutex<Option<Client>>,
}

impl Clone for PostgresSource {
    fn clone(&self) -> Self {
        PostgresSource {
            url: self.url.clone(),
            query: self.query.clone(),
            emitted: self.emitted,
            client: Mutex::new(None),
        }
    }
}

impl PostgresSource {
    /// Reads `columns` of `table`, each as text, in the order of
    /// `order_by` (none: the server's scan order).
    pub fn text(
        url: &str,
        table: &str,
        columns: &[&str],
        order_by: &[&str],
    ) -> Result<PostgresSource, PostgresSinkError> {
        if columns.is_empty() {
            return Err(PostgresSinkError::Config("no columns to read".into()));
        }
        let table = identifier(table)?;
        let columns = columns
            .iter()
            .map(|c| identifier(c).map(|c| format!("{c}::text")))
            .collect::<Result<Vec<_>, _>>()?;
        let order = order_by
            .iter()
            .map(|c| identifier(c))
            .collect::<Result<Vec<_>, _>>()?;
        let mut query = format!("SELECT {} FROM {table}", columns.join(", "));
        if !order.is_empty() {
            query.push_str(&format!(" ORDER BY {}", order.join(", ")));
        }
        Ok(PostgresSource {
            url: url.to_string(),
            query,
            emitted: 0,
            client: Mutex::new(None),
        })
    }

    /// The query the source runs.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Connects and declares the cursor, past the rows emitted already.
    fn start(&mut self) -> Result<&mut Client, PostgresSinkError> {
        let emitted = self.emitted;
        let slot = crate::unshared(&mut self.client);
        if slot.is_none() {
            let mut client = connect(&self.url)?;
            client
                .batch_execute(&format!(
                    "SET TIME ZONE 'UTC'; BEGIN READ ONLY; DECLARE weir_scan NO SCROLL CURSOR FOR {}",
                    self.query
                ))
                .map_err(PostgresSinkError::statement(format!(
                    "starting the scan {}",
                    self.query
                )))?;
            if emitted > 0 {
                client
                    .batch_execute(&format!("MOVE FORWARD {emitted} IN weir_scan"))
                    .map_err(PostgresSinkError::statement(
                        "skipping the rows read before the checkpoint",
                    ))?;
            }
            *slot = Some(client);
        }
        slot.as_mut()
            .ok_or_else(|| PostgresSinkError::Config("the scan did not start".into()))
    }
}

impl SourceFunction<Vec<Option<String>>> for PostgresSource {
    fn poll_next(
        &mut self,
        ctx: &mut SourceContext<'_, Vec<Option<String>>>,
    ) -> FunctionResult<SourceStatus> {
        let want = ctx.remaining().clamp(1, FETCH);
        let client = self.start()?;
        let rows = client
            .query(format!("FETCH {want} FROM weir_scan").as_str(), &[])
            .map_err(PostgresSinkError::statement("reading the scan"))?;
        let fetched = rows.len();
        if fetched < want {
            client
                .batch_execute("COMMIT")
                .map_err(PostgresSinkError::statement("ending the scan"))?;
        }
        for row in &rows {
            let values = (0..row.len())
                .map(|i| row.try_get::<_, Option<String>>(i))
                .collect::<Result<Vec<_>, _>>()
                .map_err(PostgresSinkError::statement("reading a row"))?;
            ctx.collect(values);
        }
        self.emitted += fetched as u64;
        if fetched < want {
            *crate::unshared(&mut self.client) = None;
            return Ok(SourceStatus::Finished);
        }
        Ok(SourceStatus::More)
    }

    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        Ok(Some(self.emitted.to_le_bytes().to_vec()))
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        let bytes: [u8; 8] = position
            .try_into()
            .map_err(|_| "a PostgreSQL scan's position must be 8 bytes")?;
        self.emitted = u64::from_le_bytes(bytes);
        *crate::unshared(&mut self.client) = None;
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        *crate::unshared(&mut self.client) = None;
        Ok(())
    }
}
