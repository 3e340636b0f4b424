//! The exactly-once Kafka sink's transactions (the [`TwoPhaseCommit`]
//! system behind `DeliveryGuarantee::ExactlyOnce`).
//!
//! Each subtask has a small pool of transactional producers, ids
//! `<prefix>-<subtask>-<slot>`; a checkpoint's records go into one
//! transaction of a free slot, which the barrier pre-commits (flushes) and
//! the checkpoint's completion commits. Opening a subtask initialises every
//! id of its pool, which aborts whatever a previous run left open.
//!
//! librdkafka cannot take over another producer's transaction, so a
//! transaction whose checkpoint completed but whose commit did not happen
//! before a crash cannot be committed by the restored job: initialising its
//! id finishes it, committed (if the commit request reached the broker) or
//! aborted. To know which, every transaction also commits a marker, its
//! number as the offset of partition 0 of the sink's topic in the consumer
//! group `<prefix>-<subtask>-<slot>`; Kafka applies a transaction's offsets only
//! when it commits. A pre-committed transaction keeps its records in the
//! checkpoint until it is committed; on restore, a transaction whose marker
//! is not reached is written again in a fresh transaction. Numbers grow
//! with time across runs, and commits of a subtask happen in checkpoint
//! order, so a marker at or beyond a transaction's number means it
//! committed. A sink with a commit log also takes the log's word for it:
//! a broker that loses a transaction's offsets (tansu does, now and then)
//! would otherwise have the records written twice. The design and what
//! was verified are in `docs/design/kafka.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::OwnedHeaders;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};
use weir::functions::{FunctionResult, RuntimeContext, SinkContext};
use weir::sink::TwoPhaseCommit;

use super::audit::{read_topic_since, TopicRecord};
use super::sink::{transaction_header, transaction_name, Deliveries, Encoded, Encoder};

/// Transactional ids per subtask initialised when it opens.
pub const POOL: u32 = 4;
/// Transaction numbers are this far apart; the numbers between belong to
/// the transactions that write a lost commit's records again.
const SPACING: i64 = 1024;
/// How long a transactional request may take.
const REQUEST: Duration = Duration::from_secs(60);
/// How far before a transaction's number (its start) its commit-log entry
/// is looked for: the clocks of the producer and of the broker's
/// timestamps may differ a little.
const LOG_SLACK_MS: i64 = 60_000;

/// A transaction as the checkpoint keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KafkaTxn {
    /// The subtask and slot of its transactional id.
    subtask: u32,
    slot: u32,
    /// Its number, committed as its marker.
    instance: i64,
    /// Its records, kept until its commit is confirmed.
    records: Vec<Encoded>,
}

/// A producer being initialised on a thread of its own.
type Starting = std::thread::JoinHandle<Result<BaseProducer<Deliveries>, String>>;

/// A slot of the pool: its producer, and whether it has a transaction open.
/// Every transaction gets a fresh producer (as Flink's `KafkaSink` does),
/// initialised in the background while the previous one commits: Kafka
/// brokers apply a transaction's offsets however many transactions a
/// producer ran, but tansu only for the first transaction of each producer
/// epoch, and the marker depends on them.
struct Slot {
    starting: Option<Starting>,
    producer: Option<BaseProducer<Deliveries>>,
    open: bool,
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn joined(starting: Starting) -> FunctionResult<BaseProducer<Deliveries>> {
    match starting.join() {
        Ok(started) => Ok(started?),
        Err(_) => Err("initialising a Kafka producer panicked".into()),
    }
}

/// See the module docs.
pub struct KafkaTransactions<T> {
    encoder: Arc<Encoder<T>>,
    prefix: String,
    commit_log: Option<String>,
    subtask: u32,
    /// This subtask's producers by slot.
    slots: Vec<Slot>,
    failed: Arc<Mutex<Option<String>>>,
    /// Marker groups' consumers, by subtask and slot.
    markers: BTreeMap<(u32, u32), BaseConsumer>,
    /// Each marker group's offset as found on restore, by subtask and
    /// slot, read before anything was written again into the group.
    restored_markers: BTreeMap<(u32, u32), i64>,
    /// Subtasks of the restored run whose ids were initialised here.
    fenced: BTreeSet<u32>,
    log: Option<BaseProducer<Deliveries>>,
    /// The commit log's entries since a time (ms), read once on restore.
    logged: Option<(i64, BTreeSet<String>)>,
    last_instance: i64,
    /// The open transaction's header (with a commit log).
    headers: Option<OwnedHeaders>,
}

impl<T> KafkaTransactions<T> {
    pub(crate) fn new(
        encoder: Arc<Encoder<T>>,
        prefix: String,
        commit_log: Option<String>,
    ) -> Self {
        KafkaTransactions {
            encoder,
            prefix,
            commit_log,
            subtask: 0,
            slots: Vec::new(),
            failed: Arc::new(Mutex::new(None)),
            markers: BTreeMap::new(),
            restored_markers: BTreeMap::new(),
            fenced: BTreeSet::new(),
            log: None,
            logged: None,
            last_instance: 0,
            headers: None,
        }
    }

    fn servers(&self) -> &str {
        &self.encoder.servers
    }

    fn transactional_id(&self, subtask: u32, slot: u32) -> String {
        format!("{}-{subtask}-{slot}", self.prefix)
    }

    /// Starts initialising a producer of `subtask`'s `slot` on a thread:
    /// a transaction the id had open is finished (committed if its commit
    /// was requested, aborted otherwise) and its old producer fenced.
    fn start_producer(&self, subtask: u32, slot: u32) -> FunctionResult<Starting> {
        let id = self.transactional_id(subtask, slot);
        let config = self.encoder.config(&[
            ("transactional.id", &id),
            // Kafka's default limit on the broker; a transaction open
            // longer (a checkpoint interval, plus the time until the
            // checkpoint completes) is aborted by the broker.
            ("transaction.timeout.ms", "900000"),
        ]);
        let failed = Arc::clone(&self.failed);
        let servers = self.servers().to_string();
        let starting = std::thread::Builder::new()
            .name(format!("kafka-init {id}"))
            .spawn(move || {
                let producer: BaseProducer<Deliveries> = config
                    .create_with_context(Deliveries { failed })
                    .map_err(|e| format!("Kafka producer for {servers}: {e}"))?;
                producer.init_transactions(REQUEST).map_err(|e| {
                    format!("Kafka at {servers}: initialising transactional id {id}: {e}")
                })?;
                Ok(producer)
            })
            .map_err(|e| format!("starting a thread: {e}"))?;
        Ok(starting)
    }

    /// A producer of `subtask`'s `slot`, initialised (see
    /// [`start_producer`](Self::start_producer)).
    fn init_producer(&self, subtask: u32, slot: u32) -> FunctionResult<BaseProducer<Deliveries>> {
        joined(self.start_producer(subtask, slot)?)
    }

    /// Waits until `slot`'s producer is initialised.
    fn ready(&mut self, slot: u32) -> FunctionResult {
        let entry = self
            .slots
            .get_mut(slot as usize)
            .ok_or_else(|| format!("Kafka sink: no slot {slot}"))?;
        if let Some(starting) = entry.starting.take() {
            entry.producer = Some(joined(starting)?);
        }
        Ok(())
    }

    /// Replaces `slot`'s producer, whose transaction ended, by a fresh one.
    fn renew(&mut self, slot: u32) -> FunctionResult {
        let starting = self.start_producer(self.subtask, slot)?;
        if let Some(entry) = self.slots.get_mut(slot as usize) {
            // The new producer's initialisation fences the old one.
            entry.producer = None;
            entry.starting = Some(starting);
            entry.open = false;
        }
        Ok(())
    }

    /// The group of the markers of `subtask`'s transactions in `slot`: one
    /// per slot, so that no two transactions open at once commit offsets
    /// of the same group (tansu then applies only some of them).
    fn marker_group(&self, subtask: u32, slot: u32) -> String {
        format!("{}-{subtask}-{slot}", self.prefix)
    }

    fn marker_consumer(&mut self, subtask: u32, slot: u32) -> FunctionResult<&BaseConsumer> {
        if !self.markers.contains_key(&(subtask, slot)) {
            let consumer: BaseConsumer = self
                .encoder
                .config(&[
                    ("group.id", &self.marker_group(subtask, slot)),
                    ("enable.auto.commit", "false"),
                    ("isolation.level", "read_committed"),
                ])
                .create()
                .map_err(|e| format!("Kafka consumer for {}: {e}", self.servers()))?;
            self.markers.insert((subtask, slot), consumer);
        }
        Ok(&self.markers[&(subtask, slot)])
    }

    fn marker_partition(&self, offset: Option<i64>) -> FunctionResult<TopicPartitionList> {
        let mut list = TopicPartitionList::new();
        match offset {
            Some(offset) => {
                list.add_partition_offset(&self.encoder.topic, 0, Offset::Offset(offset))
            }
            None => {
                list.add_partition(&self.encoder.topic, 0);
                Ok(())
            }
        }
        .map_err(|e| format!("Kafka: the marker partition: {e}"))?;
        Ok(list)
    }

    /// The offset of the marker group of `subtask`'s `slot` (0: none).
    fn read_slot_marker(&mut self, subtask: u32, slot: u32) -> FunctionResult<i64> {
        let servers = self.servers().to_string();
        let list = self.marker_partition(None)?;
        let group = self.marker_group(subtask, slot);
        let committed = self
            .marker_consumer(subtask, slot)?
            .committed_offsets(list, REQUEST)
            .map_err(|e| format!("Kafka at {servers}: reading the marker of {group}: {e}"))?;
        Ok(match committed.elements().first().map(|e| e.offset()) {
            Some(Offset::Offset(n)) => n,
            _ => 0,
        })
    }

    /// The number of the last transaction `subtask` committed (0: none):
    /// the highest marker of its slots `0..slots`.
    #[cfg(test)]
    fn read_marker(&mut self, subtask: u32, slots: u32) -> FunctionResult<i64> {
        let mut highest = 0;
        for slot in 0..slots {
            highest = highest.max(self.read_slot_marker(subtask, slot)?);
        }
        Ok(highest)
    }

    /// The marker of `subtask`'s `slot` as it was before this run wrote
    /// anything into its group.
    fn restored_marker(&mut self, subtask: u32, slot: u32) -> FunctionResult<i64> {
        if let Some(marker) = self.restored_markers.get(&(subtask, slot)) {
            return Ok(*marker);
        }
        let marker = self.read_slot_marker(subtask, slot)?;
        self.restored_markers.insert((subtask, slot), marker);
        Ok(marker)
    }

    /// A number above every earlier one, also those of earlier runs
    /// (microseconds since the epoch, a multiple of [`SPACING`]).
    fn next_instance(&mut self) -> i64 {
        let now = now_micros();
        self.last_instance = (now - now % SPACING).max(self.last_instance + SPACING);
        self.last_instance
    }

    fn producer(&self, slot: u32) -> FunctionResult<&BaseProducer<Deliveries>> {
        self.slots
            .get(slot as usize)
            .and_then(|s| s.producer.as_ref())
            .ok_or_else(|| format!("Kafka sink: no producer ready in slot {slot}").into())
    }

    /// Commits `instance` as `subtask`'s marker in the open transaction of
    /// `slot`, and flushes its records.
    fn pre_commit_slot(&mut self, slot: u32, subtask: u32, instance: i64) -> FunctionResult {
        let offsets = self.marker_partition(Some(instance))?;
        let servers = self.servers().to_string();
        let group = self
            .marker_consumer(subtask, slot)?
            .group_metadata()
            .ok_or("Kafka: the marker consumer has no group")?;
        let producer = self.producer(slot)?;
        producer
            .send_offsets_to_transaction(&offsets, &group, REQUEST)
            .map_err(|e| format!("Kafka at {servers}: the transaction's marker: {e}"))?;
        producer
            .flush(REQUEST)
            .map_err(|e| format!("Kafka at {servers}: flushing the transaction: {e}"))?;
        Deliveries::check(&self.failed, &servers)
    }

    fn commit_slot(&mut self, slot: u32) -> FunctionResult {
        let servers = self.servers().to_string();
        self.producer(slot)?
            .commit_transaction(REQUEST)
            .map_err(|e| format!("Kafka at {servers}: committing a transaction: {e}"))?;
        self.renew(slot)
    }

    /// Writes `instance` to the commit log, if there is one.
    fn log_commit(&self, subtask: u32, instance: i64) -> FunctionResult {
        let (Some(log), Some(topic)) = (&self.log, &self.commit_log) else {
            return Ok(());
        };
        let (key, value) = (
            subtask.to_string(),
            transaction_name(&self.prefix, subtask, instance),
        );
        log.send(BaseRecord::to(topic).key(&key).payload(&value))
            .map_err(|(e, _)| format!("Kafka: the commit log {topic}: {e}"))?;
        log.flush(REQUEST)
            .map_err(|e| format!("Kafka: the commit log {topic}: {e}"))?;
        Deliveries::check(&self.failed, self.servers())
    }

    /// Whether the commit log shows `txn` (or a transaction writing its
    /// records again) committed. Read once per restore, from shortly
    /// before the earliest transaction asked about: entries are written
    /// after their transaction began.
    fn logged_as_committed(&mut self, txn: &KafkaTxn) -> FunctionResult<bool> {
        let Some(topic) = self.commit_log.clone() else {
            return Ok(false);
        };
        let since = txn.instance / 1000 - LOG_SLACK_MS;
        if self.logged.as_ref().is_none_or(|(from, _)| *from > since) {
            let entries = read_topic_since(self.servers(), &topic, Some(since))?
                .iter()
                .map(TopicRecord::text)
                .collect();
            self.logged = Some((since, entries));
        }
        let own = transaction_name(&self.prefix, txn.subtask, txn.instance);
        let own = own.rsplit_once(':').map_or("", |(head, _)| head);
        Ok(self.logged.as_ref().is_some_and(|(_, entries)| {
            entries
                .iter()
                .filter_map(|e| e.rsplit_once(':'))
                .filter(|(head, _)| *head == own)
                .filter_map(|(_, n)| n.parse::<i64>().ok())
                .any(|n| (txn.instance..txn.instance + SPACING).contains(&n))
        }))
    }

    /// Initialises every pool id of `subtask` of the restored run (so
    /// that nothing it left open lingers), once.
    fn fence(&mut self, subtask: u32) -> FunctionResult {
        if subtask != self.subtask && self.fenced.insert(subtask) {
            for slot in 0..POOL {
                self.init_producer(subtask, slot)?;
            }
        }
        Ok(())
    }

    /// Starts a transaction in a free slot (a new one if all are busy).
    fn begin_in_free_slot(&mut self) -> FunctionResult<u32> {
        let slot = match self.slots.iter().position(|s| !s.open) {
            Some(slot) => slot as u32,
            None => {
                let slot = self.slots.len() as u32;
                let starting = self.start_producer(self.subtask, slot)?;
                self.slots.push(Slot {
                    starting: Some(starting),
                    producer: None,
                    open: false,
                });
                slot
            }
        };
        self.ready(slot)?;
        let servers = self.servers().to_string();
        self.producer(slot)?
            .begin_transaction()
            .map_err(|e| format!("Kafka at {servers}: beginning a transaction: {e}"))?;
        self.slots[slot as usize].open = true;
        Ok(slot)
    }

    /// Initialises the pool of `subtask` and the commit log's producer.
    fn open_subtask(&mut self, subtask: u32) -> FunctionResult {
        self.subtask = subtask;
        for slot in 0..POOL {
            let starting = self.start_producer(subtask, slot)?;
            self.slots.push(Slot {
                starting: Some(starting),
                producer: None,
                open: false,
            });
        }
        // All initialised (in parallel) before anything is restored: what
        // a previous run left open is finished by now.
        for slot in 0..POOL {
            self.ready(slot)?;
        }
        if self.commit_log.is_some() {
            let log: BaseProducer<Deliveries> = self
                .encoder
                // A line written twice is harmless: no idempotence needed.
                .config(&[("acks", "all")])
                .create_with_context(Deliveries {
                    failed: Arc::clone(&self.failed),
                })
                .map_err(|e| format!("Kafka producer for {}: {e}", self.servers()))?;
            self.log = Some(log);
        }
        Ok(())
    }
}

impl<T: Send + 'static> TwoPhaseCommit<T> for KafkaTransactions<T> {
    type Txn = KafkaTxn;

    fn name(&self) -> String {
        format!("Kafka: {}", self.encoder.topic)
    }

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.open_subtask(ctx.subtask_index)
    }

    fn begin_transaction(&mut self) -> FunctionResult<KafkaTxn> {
        let slot = self.begin_in_free_slot()?;
        let instance = self.next_instance();
        let subtask = self.subtask;
        self.headers = self
            .commit_log
            .is_some()
            .then(|| transaction_header(&transaction_name(&self.prefix, subtask, instance)));
        Ok(KafkaTxn {
            subtask: self.subtask,
            slot,
            instance,
            records: Vec::new(),
        })
    }

    fn invoke(&mut self, txn: &mut KafkaTxn, value: T, ctx: &SinkContext) -> FunctionResult {
        let record = self.encoder.encode(&value, ctx.timestamp())?;
        self.encoder
            .send(self.producer(txn.slot)?, &record, self.headers.as_ref())?;
        txn.records.push(record);
        Deliveries::check(&self.failed, self.servers())
    }

    fn pre_commit(&mut self, txn: &mut KafkaTxn, _checkpoint_id: u64) -> FunctionResult {
        self.pre_commit_slot(txn.slot, txn.subtask, txn.instance)
    }

    fn commit(&mut self, txn: KafkaTxn) -> FunctionResult {
        self.commit_slot(txn.slot)?;
        self.log_commit(txn.subtask, txn.instance)
    }

    fn abort(&mut self, txn: KafkaTxn) -> FunctionResult {
        let servers = self.servers().to_string();
        self.producer(txn.slot)?
            .abort_transaction(REQUEST)
            .map_err(|e| format!("Kafka at {servers}: aborting a transaction: {e}"))?;
        self.renew(txn.slot)
    }

    /// The transaction was finished when its id was initialised; its
    /// marker says whether it committed. If not, its records are written
    /// again in a new transaction, committed at once (its checkpoint is
    /// complete).
    fn recover_and_commit(&mut self, txn: KafkaTxn) -> FunctionResult {
        self.fence(txn.subtask)?;
        if txn.slot >= POOL {
            // A slot beyond the pool was not initialised with it.
            self.init_producer(txn.subtask, txn.slot)?;
        }
        // The subtask's marker as the crash left it: the highest of the
        // groups of every slot up to the transaction's (more than the
        // pool's when checkpoints were pre-committed faster than they
        // completed), each read before anything was written again into it.
        let mut marker = 0;
        for slot in 0..POOL.max(txn.slot + 1) {
            marker = marker.max(self.restored_marker(txn.subtask, slot)?);
        }
        if marker >= txn.instance && marker < txn.instance + SPACING {
            // It, or a transaction writing its records again, committed;
            // the commit log may have missed it.
            return self.log_commit(txn.subtask, marker);
        }
        if marker >= txn.instance {
            // A later transaction committed, after this one was logged.
            return Ok(());
        }
        if self.logged_as_committed(&txn)? {
            // Committed and logged, but the broker lost the marker (tansu
            // has been seen to drop a transaction's offsets now and then).
            return Ok(());
        }
        let slot = self.begin_in_free_slot()?;
        // Writing again moves this slot's marker: what it was comes first.
        self.restored_marker(txn.subtask, slot)?;
        // A number of its own between this transaction's and the next, so
        // that a marker shows it; unlikely to be that of an earlier attempt
        // that did not commit.
        let instance = txn.instance + 1 + now_micros() % (SPACING - 1);
        let headers = self
            .commit_log
            .is_some()
            .then(|| transaction_header(&transaction_name(&self.prefix, txn.subtask, instance)));
        for record in &txn.records {
            self.encoder
                .send(self.producer(slot)?, record, headers.as_ref())?;
        }
        self.pre_commit_slot(slot, txn.subtask, instance)?;
        self.commit_slot(slot)?;
        self.log_commit(txn.subtask, instance)
    }

    /// Initialising the transaction's id aborted it.
    fn recover_and_abort(&mut self, txn: KafkaTxn) -> FunctionResult {
        self.fence(txn.subtask)
    }

    fn close(&mut self) -> FunctionResult {
        // Dropping a producer with an open transaction leaves it to the
        // broker's timeout; the next run's initialisation aborts it sooner.
        self.finish_starting();
        self.slots.clear();
        self.markers.clear();
        self.log = None;
        Ok(())
    }
}

impl<T> KafkaTransactions<T> {
    /// Waits for producers still being initialised in the background: one
    /// that finished after a restarted attempt initialised the same id
    /// would fence that attempt's producer.
    fn finish_starting(&mut self) {
        for slot in &mut self.slots {
            if let Some(starting) = slot.starting.take() {
                let _ = starting.join();
            }
        }
    }
}

impl<T> Drop for KafkaTransactions<T> {
    fn drop(&mut self) {
        // Also after a failure, when `close` is not called.
        self.finish_starting();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::{read_committed, read_topic, LocalKafka};

    fn system(kafka: &LocalKafka) -> KafkaTransactions<String> {
        let mut encoder = Encoder::new(&kafka.bootstrap_servers(), "out", |s: &String| {
            (None, s.clone().into_bytes())
        });
        let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
        encoder.properties.push((key.into(), value.into()));
        KafkaTransactions::new(Arc::new(encoder), "job".into(), Some("commits".into()))
    }

    fn broker() -> LocalKafka {
        let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
        kafka.create_topic("out", 1).expect("topic");
        kafka.create_topic("commits", 1).expect("topic");
        kafka
    }

    /// A transaction pre-committed for `checkpoint` with `values`, left
    /// uncommitted as by a crash.
    fn pre_committed(kafka: &LocalKafka, values: &[&str]) -> (KafkaTransactions<String>, KafkaTxn) {
        let mut crashed = system(kafka);
        crashed.open_subtask(0).expect("opens");
        let mut txn = crashed.begin_transaction().expect("begins");
        let ctx = SinkContext::new(0, i64::MIN);
        for v in values {
            crashed
                .invoke(&mut txn, v.to_string(), &ctx)
                .expect("writes");
        }
        crashed.pre_commit(&mut txn, 1).expect("pre-commits");
        (crashed, txn)
    }

    fn committed_values(kafka: &LocalKafka) -> Vec<String> {
        read_committed(&kafka.bootstrap_servers(), "out", "commits")
            .expect("reads")
            .iter()
            .map(|r| r.text())
            .collect()
    }

    #[test]
    fn a_transaction_whose_commit_was_lost_is_written_again_once() {
        let kafka = broker();
        let (crashed, txn) = pre_committed(&kafka, &["a", "b", "c"]);
        drop(crashed);
        // The checkpoint completed, the commit never happened: the restored
        // run's initialisation aborts the transaction, the marker says so,
        // and the records are written again.
        let mut restored = system(&kafka);
        restored.open_subtask(0).expect("opens");
        restored.recover_and_commit(txn.clone()).expect("recovers");
        assert_eq!(committed_values(&kafka), ["a", "b", "c"]);
        let all = read_topic(&kafka.bootstrap_servers(), "out").expect("reads");
        assert_eq!(all.len(), 6, "the aborted three and the new three");
        let tag = all[3].transaction.clone().expect("tagged");
        let again: i64 = tag
            .rsplit(':')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a number");
        assert!(again > txn.instance && again < txn.instance + SPACING);
        drop(restored);
        // Restored from the same checkpoint once more (a crash before the
        // next one): the marker shows the new transaction, nothing is
        // written a third time.
        let mut twice = system(&kafka);
        twice.open_subtask(0).expect("opens");
        twice.recover_and_commit(txn).expect("recovers");
        assert_eq!(committed_values(&kafka), ["a", "b", "c"]);
        assert_eq!(
            read_topic(&kafka.bootstrap_servers(), "out")
                .expect("reads")
                .len(),
            6
        );
    }

    #[test]
    fn a_committed_transaction_is_not_written_again_and_is_logged() {
        let kafka = broker();
        let (mut crashed, txn) = pre_committed(&kafka, &["a", "b"]);
        // Committed, then the crash came before the commit log was written.
        crashed.commit_slot(txn.slot).expect("commits");
        drop(crashed);
        assert!(committed_values(&kafka).is_empty(), "not logged yet");
        restores_as_committed_once(&kafka, txn);
    }

    /// Restores `txn` (of records a, b) and checks that it shows as
    /// committed and that nothing was written again.
    fn restores_as_committed_once(kafka: &LocalKafka, txn: KafkaTxn) {
        let mut restored = system(kafka);
        restored.open_subtask(0).expect("opens");
        restored.recover_and_commit(txn).expect("recovers");
        assert_eq!(committed_values(kafka), ["a", "b"]);
        let all = read_topic(&kafka.bootstrap_servers(), "out").expect("reads");
        assert_eq!(all.len(), 2, "nothing written again");
    }

    #[test]
    fn a_logged_transaction_whose_marker_the_broker_lost_is_not_written_again() {
        let kafka = broker();
        let (mut crashed, txn) = pre_committed(&kafka, &["a", "b"]);
        crashed.commit(txn.clone()).expect("commits and logs");
        drop(crashed);
        // The broker forgets the transaction's offsets (tansu now and then):
        // the marker group is back before the transaction's number.
        let mut lost = system(&kafka);
        let back = lost.marker_partition(Some(1)).expect("partition");
        lost.marker_consumer(0, txn.slot)
            .expect("consumer")
            .commit(&back, rdkafka::consumer::CommitMode::Sync)
            .expect("moves the marker back");
        assert!(lost.read_marker(0, POOL).expect("reads") < txn.instance);
        drop(lost);
        // The commit log shows it committed.
        restores_as_committed_once(&kafka, txn);
    }

    #[test]
    fn committed_transactions_beyond_the_pool_are_not_written_again() {
        // More checkpoints pre-committed at once than the pool has ids
        // (slow checkpoints): the fifth transaction takes a slot of its
        // own. All commit, then the crash; the restored checkpoint still
        // lists them all as pending (its notices came after it).
        let kafka = broker();
        let mut crashed = system(&kafka);
        crashed.open_subtask(0).expect("opens");
        let ctx = SinkContext::new(0, i64::MIN);
        let mut txns = Vec::new();
        for (i, value) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            let mut txn = crashed.begin_transaction().expect("begins");
            crashed
                .invoke(&mut txn, value.to_string(), &ctx)
                .expect("writes");
            crashed
                .pre_commit(&mut txn, i as u64 + 1)
                .expect("pre-commits");
            txns.push(txn);
        }
        assert_eq!(txns[4].slot, POOL, "a slot beyond the pool");
        for txn in txns.clone() {
            crashed.commit(txn).expect("commits");
        }
        drop(crashed);
        let mut restored = system(&kafka);
        restored.open_subtask(0).expect("opens");
        for txn in txns {
            restored.recover_and_commit(txn).expect("recovers");
        }
        assert_eq!(committed_values(&kafka), ["a", "b", "c", "d", "e"]);
        assert_eq!(
            read_topic(&kafka.bootstrap_servers(), "out")
                .expect("reads")
                .len(),
            5,
            "nothing written again"
        );
    }

    #[test]
    fn opening_aborts_what_a_crashed_run_left_open() {
        let kafka = broker();
        let (crashed, txn) = pre_committed(&kafka, &["a"]);
        drop(crashed);
        // Not in any completed checkpoint: only aborted.
        let mut restored = system(&kafka);
        restored.open_subtask(0).expect("opens");
        restored.recover_and_abort(txn).expect("aborts");
        assert_eq!(
            restored.read_marker(0, POOL).expect("reads"),
            0,
            "its marker never applied"
        );
        // The pool's ids work for new transactions.
        let mut next = restored.begin_transaction().expect("begins");
        restored
            .invoke(&mut next, "b".into(), &SinkContext::new(0, i64::MIN))
            .expect("writes");
        restored.pre_commit(&mut next, 2).expect("pre-commits");
        restored.commit(next).expect("commits");
        assert_eq!(committed_values(&kafka), ["b"]);
    }
}
