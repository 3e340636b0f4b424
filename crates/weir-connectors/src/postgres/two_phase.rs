//! Exactly-once writes into PostgreSQL by two-phase commit.
//!
//! Each sink subtask keeps one session. A checkpoint's records are kept
//! until its barrier, which writes them in the open transaction and
//! prepares it (`PREPARE TRANSACTION
//! 'gid'`, durable on the server, invisible to readers) and the
//! checkpoint's completion commits it (`COMMIT PREPARED`). The checkpoint
//! holds the prepared transactions not yet committed, so a restore commits
//! them again (a transaction already committed is gone from the server's
//! list: that is success).
//!
//! The name of a prepared transaction, `<prefix>:<run>:<checkpoint>:<subtask>`,
//! says which attempt of which job prepared it for which checkpoint. A run
//! restored from checkpoint `R` rolls back every prepared transaction of
//! the prefix from other runs for checkpoints after `R` (they hold rows the
//! sources replay); one started afresh rolls back all of other runs. The
//! prefix (default `weir:<table>`) must therefore belong to one job: two
//! jobs writing with the same prefix would roll back each other's work.
//! The server needs `max_prepared_transactions` above the sink's
//! parallelism.

use std::marker::PhantomData;

use postgres::error::SqlState;
use std::sync::Mutex;

use postgres::Client;
use serde::{Deserialize, Serialize};
use weir::functions::{FunctionResult, RuntimeContext, SinkContext};
use weir::sink::TwoPhaseCommit;

use super::{session, session_slot, PostgresSinkError, Session, Target};

/// A transaction as the checkpoint keeps it: its name once prepared.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PgTransaction {
    /// Set by `PREPARE TRANSACTION`.
    gid: Option<String>,
}

/// The [`TwoPhaseCommit`] system of [`super::PostgresSink::exactly_once`].
pub struct PostgresTwoPhaseCommit<T> {
    target: Target<T>,
    prefix: String,
    /// `<job>.<attempt>`: this run, in the names of what it prepares.
    run: String,
    subtask: u32,
    parallelism: u32,
    /// The session rows are written in, always inside the open transaction.
    session: Session,
    /// A second session for what cannot run inside a transaction:
    /// committing and rolling back prepared transactions.
    control: Mutex<Option<Client>>,
    /// The open transaction's records, written when the barrier prepares
    /// it (in a mutex only to be `Sync`).
    rows: Mutex<Vec<T>>,
    _type: PhantomData<fn(T)>,
}

impl<T> Clone for PostgresTwoPhaseCommit<T> {
    /// The configuration; each subtask opens its own sessions.
    fn clone(&self) -> Self {
        PostgresTwoPhaseCommit::new(self.target.clone()).with_transaction_prefix(&self.prefix)
    }
}

/// A prepared transaction's name, parsed.
#[derive(Debug, PartialEq, Eq)]
struct Gid<'a> {
    run: &'a str,
    checkpoint: u64,
    subtask: u32,
}

fn parse_gid<'a>(prefix: &str, gid: &'a str) -> Option<Gid<'a>> {
    let rest = gid.strip_prefix(prefix)?.strip_prefix(':')?;
    let mut parts = rest.rsplitn(3, ':');
    let subtask = parts.next()?.parse::<u32>().ok()?;
    let checkpoint = parts.next()?.parse::<u64>().ok()?;
    let run = parts.next()?;
    Some(Gid {
        run,
        checkpoint,
        subtask,
    })
}

/// Whether a prepared transaction of another run is left over: written
/// after the restored checkpoint (or with nothing restored at all).
fn left_over(gid: &Gid<'_>, run: &str, restored: Option<u64>) -> bool {
    gid.run != run && restored.is_none_or(|r| gid.checkpoint > r)
}

/// Whether `e` says the prepared transaction does not exist (committed or
/// rolled back before).
fn is_gone(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNDEFINED_OBJECT)
}

/// Runs `statement` (a `COMMIT PREPARED` or `ROLLBACK PREPARED`); a
/// transaction another session is still finishing ("busy": the session
/// of a failed attempt, not yet gone) is tried again for up to ten
/// seconds, and one that is gone counts as done.
fn finish_prepared(client: &mut Client, statement: &str) -> Result<(), PostgresSinkError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match client.batch_execute(statement) {
            Ok(()) => return Ok(()),
            Err(e) if is_gone(&e) => return Ok(()),
            Err(e)
                if e.code() == Some(&SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(PostgresSinkError::statement(statement.to_string())(e)),
        }
    }
}

/// `'text'` as an SQL literal (names are ours, but quote them properly).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl<T> PostgresTwoPhaseCommit<T> {
    pub(crate) fn new(target: Target<T>) -> Self {
        PostgresTwoPhaseCommit {
            prefix: format!("weir:{}", target.table),
            target,
            run: String::new(),
            subtask: 0,
            parallelism: 1,
            session: Mutex::new(None),
            control: Mutex::new(None),
            rows: Mutex::new(Vec::new()),
            _type: PhantomData,
        }
    }

    /// Names prepared transactions `<prefix>:…` instead of
    /// `weir:<table>:…`: one prefix per job writing to the same database.
    pub fn with_transaction_prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_string();
        self
    }

    fn client(&mut self) -> Result<&mut Client, PostgresSinkError> {
        session(&mut self.session)
            .map(|(c, _)| c)
            .ok_or_else(|| PostgresSinkError::Config("the sink was not opened".into()))
    }

    fn control(&mut self) -> Result<&mut Client, PostgresSinkError> {
        crate::unshared(&mut self.control)
            .as_mut()
            .ok_or_else(|| PostgresSinkError::Config("the sink was not opened".into()))
    }

    /// Rolls back the prepared transactions of other runs that the
    /// restored checkpoint does not cover.
    fn roll_back_leftovers(&mut self, restored: Option<u64>) -> Result<(), PostgresSinkError> {
        let (prefix, run) = (self.prefix.clone(), self.run.clone());
        let (subtask, parallelism) = (self.subtask, self.parallelism.max(1));
        let client = self.control()?;
        let rows = client
            .query(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()",
                &[],
            )
            .map_err(PostgresSinkError::statement(
                "listing prepared transactions",
            ))?;
        for row in rows {
            let gid: String = row.get(0);
            // Each leftover is rolled back by one subtask (that of its old
            // index, modulo the parallelism): no two sessions race for it.
            let leftover = parse_gid(&prefix, &gid).is_some_and(|g| {
                left_over(&g, &run, restored) && g.subtask % parallelism == subtask
            });
            if leftover {
                finish_prepared(client, &format!("ROLLBACK PREPARED {}", literal(&gid)))?;
            }
        }
        Ok(())
    }
}

impl<T: Send + 'static> TwoPhaseCommit<T> for PostgresTwoPhaseCommit<T> {
    type Txn = PgTransaction;

    fn name(&self) -> String {
        format!("PostgreSQL exactly-once: {}", self.target.table)
    }

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index;
        self.parallelism = ctx.parallelism;
        self.run = format!("{}.{}", ctx.job_id, ctx.attempt_number);
        *session_slot(&mut self.session) = Some(self.target.open()?);
        *crate::unshared(&mut self.control) = Some(super::connect(&self.target.url)?);
        self.roll_back_leftovers(ctx.restored_checkpoint)?;
        // A row locked by a prepared transaction waits for its commit,
        // which this subtask's own thread delivers: a wait that long is an
        // error (the job restarts and recovery commits), never a hang.
        self.client()?
            .batch_execute("SET lock_timeout = '10s'")
            .map_err(PostgresSinkError::statement("setting lock_timeout"))?;
        Ok(())
    }

    fn begin_transaction(&mut self) -> FunctionResult<PgTransaction> {
        crate::unshared(&mut self.rows).clear();
        self.client()?
            .batch_execute("BEGIN")
            .map_err(PostgresSinkError::statement("beginning a transaction"))?;
        Ok(PgTransaction::default())
    }

    /// Kept until the barrier: rows written now could wait for locks that
    /// the previous checkpoint's prepared transaction holds until its
    /// commit (an upsert of the same key), which this thread delivers.
    fn invoke(&mut self, _txn: &mut PgTransaction, value: T, _ctx: &SinkContext) -> FunctionResult {
        crate::unshared(&mut self.rows).push(value);
        Ok(())
    }

    fn pre_commit(&mut self, txn: &mut PgTransaction, checkpoint_id: u64) -> FunctionResult {
        let rows = std::mem::take(crate::unshared(&mut self.rows));
        let Some((client, inserts)) = session(&mut self.session) else {
            return Err("the PostgreSQL sink was not opened".into());
        };
        self.target.write_all(client, inserts, &rows)?;
        let gid = format!(
            "{}:{}:{checkpoint_id}:{}",
            self.prefix, self.run, self.subtask
        );
        self.client()?
            .batch_execute(&format!("PREPARE TRANSACTION {}", literal(&gid)))
            .map_err(PostgresSinkError::statement(format!("preparing {gid}")))?;
        txn.gid = Some(gid);
        Ok(())
    }

    fn commit(&mut self, txn: PgTransaction) -> FunctionResult {
        let Some(gid) = txn.gid else {
            return Ok(());
        };
        // Gone: committed before (a commit repeated after a restore).
        finish_prepared(
            self.control()?,
            &format!("COMMIT PREPARED {}", literal(&gid)),
        )?;
        Ok(())
    }

    fn abort(&mut self, txn: PgTransaction) -> FunctionResult {
        match &txn.gid {
            Some(gid) => {
                let rollback = format!("ROLLBACK PREPARED {}", literal(gid));
                finish_prepared(self.control()?, &rollback)?;
            }
            None => {
                crate::unshared(&mut self.rows).clear();
                self.client()?
                    .batch_execute("ROLLBACK")
                    .map_err(PostgresSinkError::statement("ROLLBACK"))?
            }
        }
        Ok(())
    }

    /// The transaction open at the restored checkpoint was never prepared:
    /// its session is gone, and the server dropped it with the session.
    fn recover_and_abort(&mut self, _txn: PgTransaction) -> FunctionResult {
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        // An open transaction ends with the session (rolled back).
        *session_slot(&mut self.session) = None;
        *crate::unshared(&mut self.control) = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_run_and_checkpoint() {
        let gid = parse_gid("weir:t", "weir:t:abc.0:7:2").expect("parses");
        assert_eq!(
            gid,
            Gid {
                run: "abc.0",
                checkpoint: 7,
                subtask: 2
            }
        );
        assert!(parse_gid("weir:t", "weir:other:abc.0:7:2").is_none());
        assert!(parse_gid("weir:t", "somebody else's").is_none());
        assert!(parse_gid("weir:t", &format!("weir:t:r:{}:0", u64::MAX)).is_some());
    }

    #[test]
    fn what_is_left_over_depends_on_the_run_and_the_restored_checkpoint() {
        let gid = |run, checkpoint| Gid {
            run,
            checkpoint,
            subtask: 0,
        };
        // Ours: never.
        assert!(!left_over(&gid("me", 9), "me", Some(3)));
        // Another run's, after the restored checkpoint: rows replayed.
        assert!(left_over(&gid("old", 4), "me", Some(3)));
        // Covered by the restored checkpoint: committed by its recovery.
        assert!(!left_over(&gid("old", 3), "me", Some(3)));
        // Nothing restored: nothing of another run is wanted.
        assert!(left_over(&gid("old", 1), "me", None));
    }
}
