//! A PostgreSQL table's rows looked up by key, as Flink's JDBC lookup
//! source answers a lookup join: one prepared query per subtask, each
//! key's rows as their columns' text (`NULL` as `None`), optionally
//! cached (Flink's partial cache: at most so many keys, each for so long
//! after it was read; keys without rows cached too unless told not to).
//! A failed query is retried on a new connection, up to a number of times.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use postgres::{Client, Statement};

use super::{connect, identifier, PostgresSinkError};

/// The rows of one key, each as its columns' text.
pub type TextRows = Vec<Vec<Option<String>>>;

/// Looks rows up by key ([`PostgresLookup::text`]).
pub struct PostgresLookup {
    url: String,
    /// The query, its key parameters cast from text once their types are
    /// known ([`PostgresLookup::open`]).
    table: String,
    columns: Vec<String>,
    keys: Vec<String>,
    cache: Option<LookupCache>,
    max_retries: usize,
    /// In a mutex only to be `Sync`, as functions must be (the subtask
    /// owns it and reaches it without locking).
    session: Mutex<Option<(Client, Statement)>>,
}

impl Clone for PostgresLookup {
    /// Another subtask's: the same query and cache settings, its own
    /// connection and an empty cache.
    fn clone(&self) -> Self {
        PostgresLookup {
            url: self.url.clone(),
            table: self.table.clone(),
            columns: self.columns.clone(),
            keys: self.keys.clone(),
            cache: self.cache.as_ref().map(LookupCache::emptied),
            max_retries: self.max_retries,
            session: Mutex::new(None),
        }
    }
}

impl PostgresLookup {
    /// Looks `columns` of `table` up by equal `keys` (columns of it).
    pub fn text(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
    ) -> Result<PostgresLookup, PostgresSinkError> {
        if columns.is_empty() || keys.is_empty() {
            return Err(PostgresSinkError::Config(
                "a lookup needs columns to read and keys to look up by".into(),
            ));
        }
        let names = |names: &[&str]| {
            names
                .iter()
                .map(|c| identifier(c).map(str::to_string))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(PostgresLookup {
            url: url.to_string(),
            table: identifier(table)?.to_string(),
            columns: names(columns)?,
            keys: names(keys)?,
            cache: None,
            max_retries: 3,
            session: Mutex::new(None),
        })
    }

    /// Keeps up to `max_keys` keys' rows, each for `expire_after_write`
    /// (for ever: `None`); keys without rows too if `missing`.
    pub fn with_cache(
        mut self,
        max_keys: usize,
        expire_after_write: Option<Duration>,
        missing: bool,
    ) -> Self {
        self.cache = Some(LookupCache::new(max_keys, expire_after_write, missing));
        self
    }

    /// Retries a failed lookup this many times, each on a new connection.
    pub fn with_max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// Connects and prepares the query: a missing table or column fails
    /// here, before any row is looked up.
    pub fn open(&mut self) -> Result<(), PostgresSinkError> {
        let session = self.connect()?;
        *crate::unshared(&mut self.session) = Some(session);
        Ok(())
    }

    /// The query with each key a parameter of type `types` (given as
    /// text), or of the column's own type (unknown yet).
    fn query(&self, types: Option<&[String]>) -> String {
        let columns: Vec<String> = self.columns.iter().map(|c| format!("{c}::text")).collect();
        let conditions: Vec<String> = (self.keys.iter().enumerate())
            .map(|(i, k)| match types {
                Some(types) => format!("{k} = ${}::text::{}", i + 1, types[i]),
                None => format!("{k} = ${}", i + 1),
            })
            .collect();
        format!(
            "SELECT {} FROM {} WHERE {}",
            columns.join(", "),
            self.table,
            conditions.join(" AND ")
        )
    }

    /// A new connection and its prepared query. The keys' types are the
    /// server's for the columns, so that the text of a key compares as
    /// the column's values do (and an index on them serves).
    fn connect(&self) -> Result<(Client, Statement), PostgresSinkError> {
        let mut client = connect(&self.url)?;
        client
            .batch_execute("SET TIME ZONE 'UTC'")
            .map_err(PostgresSinkError::statement("setting the time zone"))?;
        let probe = self.query(None);
        let types: Vec<String> = client
            .prepare(&probe)
            .map_err(PostgresSinkError::statement(format!(
                "preparing the lookup {probe}"
            )))?
            .params()
            .iter()
            .map(|t| format!("{}.{}", t.schema(), t.name()))
            .collect();
        let query = self.query(Some(&types));
        let statement = client
            .prepare(&query)
            .map_err(PostgresSinkError::statement(format!(
                "preparing the lookup {query}"
            )))?;
        Ok((client, statement))
    }

    /// The rows whose keys equal `key` (as text). A NULL key equals no
    /// row, as in SQL.
    pub fn lookup(&mut self, key: &[Option<String>]) -> Result<TextRows, PostgresSinkError> {
        if key.iter().any(Option::is_none) {
            return Ok(Vec::new());
        }
        let now = Instant::now();
        if let Some(rows) = self.cache.as_mut().and_then(|c| c.get(key, now)) {
            return Ok(rows.clone());
        }
        let mut attempt = 0;
        let rows = loop {
            match self.query_rows(key) {
                Ok(rows) => break rows,
                Err(e) if attempt >= self.max_retries => return Err(e),
                Err(_) => {
                    // A new connection for the next attempt.
                    attempt += 1;
                    *crate::unshared(&mut self.session) = None;
                    std::thread::sleep(Duration::from_millis(100 * attempt as u64));
                }
            }
        };
        if let Some(cache) = self.cache.as_mut() {
            cache.put(key.to_vec(), rows.clone(), now);
        }
        Ok(rows)
    }

    fn query_rows(&mut self, key: &[Option<String>]) -> Result<TextRows, PostgresSinkError> {
        if crate::unshared(&mut self.session).is_none() {
            self.open()?;
        }
        let Some((client, statement)) = crate::unshared(&mut self.session).as_mut() else {
            return Err(PostgresSinkError::Config(
                "the lookup did not connect".into(),
            ));
        };
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> = key
            .iter()
            .map(|k| k as &(dyn postgres::types::ToSql + Sync))
            .collect();
        let rows = client
            .query(statement, &params)
            .map_err(PostgresSinkError::statement(format!(
                "looking up {} by {}",
                self.table,
                self.keys.join(", ")
            )))?;
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| row.try_get::<_, Option<String>>(i))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(PostgresSinkError::statement("reading a looked-up row"))
            })
            .collect()
    }
}

/// The keys' rows a lookup read last, up to a number of keys, each until
/// it is too old. When full, the key read longest ago goes first.
struct LookupCache {
    max_keys: usize,
    expire_after_write: Option<Duration>,
    missing: bool,
    rows: HashMap<Vec<Option<String>>, (Instant, TextRows)>,
    /// The keys in the order they were read, to evict the oldest.
    order: VecDeque<(Vec<Option<String>>, Instant)>,
}

impl LookupCache {
    fn new(max_keys: usize, expire_after_write: Option<Duration>, missing: bool) -> LookupCache {
        LookupCache {
            max_keys,
            expire_after_write,
            missing,
            rows: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn emptied(&self) -> LookupCache {
        LookupCache::new(self.max_keys, self.expire_after_write, self.missing)
    }

    fn get(&self, key: &[Option<String>], now: Instant) -> Option<&TextRows> {
        let (read, rows) = self.rows.get(key)?;
        match self.expire_after_write {
            Some(ttl) if now.duration_since(*read) >= ttl => None,
            _ => Some(rows),
        }
    }

    fn put(&mut self, key: Vec<Option<String>>, rows: TextRows, now: Instant) {
        if self.max_keys == 0 || (rows.is_empty() && !self.missing) {
            return;
        }
        self.rows.insert(key.clone(), (now, rows));
        self.order.push_back((key, now));
        while self.rows.len() > self.max_keys {
            let Some((oldest, read)) = self.order.pop_front() else {
                break;
            };
            // Only the key's latest read counts: an older entry of a key
            // read again is stale.
            if self.rows.get(&oldest).is_some_and(|(r, _)| *r == read) {
                self.rows.remove(&oldest);
            }
        }
        // Stale entries of keys read again must not grow the queue for
        // ever.
        if self.order.len() > 2 * self.max_keys.max(16) {
            let rows = &self.rows;
            self.order
                .retain(|(k, read)| rows.get(k).is_some_and(|(r, _)| r == read));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Vec<Option<String>> {
        vec![Some(k.to_string())]
    }

    fn rows(v: &str) -> TextRows {
        vec![vec![Some(v.to_string())]]
    }

    #[test]
    fn the_cache_keeps_the_keys_read_last_until_they_expire() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(10);
        let mut cache = LookupCache::new(2, Some(ttl), false);
        cache.put(key("a"), rows("1"), t0);
        cache.put(key("b"), rows("2"), t0);
        // Read again: its newer entry counts, the older is stale.
        cache.put(key("a"), rows("3"), t0 + Duration::from_secs(1));
        cache.put(key("c"), rows("4"), t0 + Duration::from_secs(2));
        assert_eq!(cache.get(&key("b"), t0), None, "the oldest read went");
        assert_eq!(cache.get(&key("a"), t0), Some(&rows("3")));
        assert_eq!(cache.get(&key("c"), t0), Some(&rows("4")));
        assert_eq!(
            cache.get(&key("a"), t0 + Duration::from_secs(11)),
            None,
            "expired"
        );
        assert!(cache.get(&key("c"), t0 + Duration::from_secs(11)).is_some());
        // A key without rows is kept only if told to.
        cache.put(key("d"), Vec::new(), t0);
        assert_eq!(cache.get(&key("d"), t0), None);
        let mut missing = LookupCache::new(2, None, true);
        missing.put(key("d"), Vec::new(), t0);
        assert_eq!(missing.get(&key("d"), t0), Some(&Vec::new()));
        // Keys read again and again do not grow the queue without bound.
        for i in 0..1000 {
            missing.put(key("e"), rows("5"), t0 + Duration::from_millis(i));
        }
        assert!(missing.order.len() <= 40, "{}", missing.order.len());
    }

    #[test]
    fn the_query_casts_each_key_from_text_to_its_columns_type() {
        let lookup = PostgresLookup::text("postgres://x", "customers", &["id", "name"], &["id"])
            .expect("plain names");
        assert_eq!(
            lookup.query(None),
            "SELECT id::text, name::text FROM customers WHERE id = $1"
        );
        assert_eq!(
            lookup.query(Some(&["pg_catalog.int8".to_string()])),
            "SELECT id::text, name::text FROM customers WHERE id = $1::text::pg_catalog.int8"
        );
        assert!(PostgresLookup::text("postgres://x", "t; DROP", &["a"], &["a"]).is_err());
        assert!(PostgresLookup::text("postgres://x", "t", &["a"], &[]).is_err());
    }
}
