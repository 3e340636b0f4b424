//! Execution: chaining, parallelism, back-pressure, failures, cancellation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir::error::{JobError, TaskError};
use weir::prelude::*;

use crate::sorted;

/// A small pipeline with every kind of edge: chained, hash and rebalance.
fn pipeline(env: &StreamExecutionEnvironment) -> DataStream<(i64, i64)> {
    env.from_sequence(1, 20_000)
        .map(|x: i64| (x % 97, x))
        .filter(|(_, x): &(i64, i64)| x % 3 != 0)
        .key_by(|(k, _)| *k)
        .sum(|(_, x)| x)
        .map(|(k, s): (i64, i64)| (k, s * 2))
}

#[test]
fn chaining_on_and_off_give_identical_results() -> anyhow::Result<()> {
    let chained = StreamExecutionEnvironment::new();
    let a = pipeline(&chained).execute_and_collect()?;
    let unchained = StreamExecutionEnvironment::new();
    unchained.disable_operator_chaining();
    let b = pipeline(&unchained).execute_and_collect()?;
    // At parallelism 1 every edge preserves order, so even the order agrees.
    assert_eq!(a, b);
    assert_eq!(a.len(), 20_000 - 20_000 / 3);
    Ok(())
}

/// Every record's output depends on that record alone, so any parallelism
/// must give the same multiset.
fn order_free(env: &StreamExecutionEnvironment) -> DataStream<(i64, i64)> {
    env.from_sequence(1, 20_000)
        .flat_map(|x: i64, out: &mut Collector<i64>| {
            if x % 5 != 0 {
                out.collect(x);
                out.collect(-x);
            }
        })
        .key_by(|x: &i64| x.abs() % 97)
        .process(
            |x: i64, ctx: &mut ProcessContext<'_, i64>, out: &mut Collector<'_, (i64, i64)>| {
                out.collect((*ctx.get_current_key(), x * 2));
                Ok(())
            },
        )
        .rebalance()
        .filter(|(_, x): &(i64, i64)| x % 3 != 0)
}

fn final_sums(out: &[(i64, i64)]) -> std::collections::BTreeMap<i64, i64> {
    // Running sums of positive values grow, so a key's largest is its final sum.
    let mut last = std::collections::BTreeMap::new();
    for (k, s) in out {
        let e = last.entry(*k).or_insert(*s);
        *e = (*e).max(*s);
    }
    last
}

#[test]
fn parallelism_1_and_4_give_the_same_multiset() -> anyhow::Result<()> {
    let one = StreamExecutionEnvironment::new();
    let a = order_free(&one).execute_and_collect()?;
    let four = StreamExecutionEnvironment::new();
    four.set_parallelism(4);
    let b = order_free(&four).execute_and_collect()?;
    assert!(a.len() > 20_000);
    assert!(sorted(a) == sorted(b), "multisets differ");

    // Running sums interleave differently, but end at the same totals.
    let one = StreamExecutionEnvironment::new();
    let a = pipeline(&one).execute_and_collect()?;
    let four = StreamExecutionEnvironment::new();
    four.set_parallelism(4);
    let b = pipeline(&four).execute_and_collect()?;
    assert_eq!(a.len(), b.len());
    assert_eq!(final_sums(&a), final_sums(&b));
    let total: i64 = (1..=20_000).filter(|x| x % 3 != 0).sum();
    assert_eq!(final_sums(&a).values().sum::<i64>(), total * 2);
    Ok(())
}

#[test]
fn a_panicking_map_fails_the_job_naming_the_operator() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.from_sequence(0, 10_000)
        .map(|x: i64| {
            if x == 5_000 {
                panic!("boom at {x}");
            }
            x
        })
        .name("Exploding Map")
        .add_sink(DiscardingSink);
    let err = env.execute("fails").err();
    match err {
        Some(weir::Error::Job(JobError::TaskFailed(TaskError::Panic { at, message }))) => {
            assert_eq!(at.operator, "Exploding Map");
            assert_eq!(at.parallelism, 2);
            assert!(message.contains("boom at 5000"), "{message}");
        }
        other => panic!("expected a panic failure, got {other:?}"),
    }
}

#[test]
fn an_error_from_a_process_function_fails_the_job_with_its_cause() {
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(0, 100)
        .rebalance()
        .process(
            |x: i64, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, i64>| {
                if x == 42 {
                    return Err(format!("cannot handle {x}").into());
                }
                out.collect(x);
                Ok(())
            },
        )
        .name("Picky")
        .set_parallelism(3)
        .add_sink(DiscardingSink);
    let err = env
        .execute("fails")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("Picky ("), "{err}");
    assert!(err.contains("/3)"), "{err}");
    assert!(err.contains("cannot handle 42"), "{err}");
}

#[test]
fn a_failing_sink_stops_an_endless_source() {
    let env = StreamExecutionEnvironment::new();
    let seen = Arc::new(AtomicU64::new(0));
    let seen_in_sink = Arc::clone(&seen);
    env.add_parallel_source(GeneratorSource::unbounded(|i| i), "endless")
        .rebalance()
        .add_sink(move |x: u64| {
            seen_in_sink.fetch_add(1, Ordering::Relaxed);
            if x > 100_000 {
                return Err("sink gave up".into());
            }
            Ok(())
        });
    let err = env
        .execute("endless")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("sink gave up"), "{err}");
    assert!(seen.load(Ordering::Relaxed) > 100_000);
}

#[test]
fn cancel_from_another_thread_stops_every_task() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.add_parallel_source(GeneratorSource::unbounded(|i| i), "endless")
        .key_by(|x: &u64| x % 10)
        .reduce(|a: u64, b: u64| a.wrapping_add(b))
        .add_sink(DiscardingSink);
    let client = env.execute_async("to cancel")?;
    let handle = client.cancel_handle();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        handle.cancel();
    });
    let outcome = client.wait();
    canceller
        .join()
        .map_err(|_| anyhow::anyhow!("canceller panicked"))?;
    assert!(matches!(outcome, Err(JobError::Cancelled)), "{outcome:?}");
    Ok(())
}

#[test]
fn a_slow_sink_bounds_what_is_buffered() -> anyhow::Result<()> {
    const BATCH: u64 = 64;
    const CAPACITY: u64 = 4;
    let env = StreamExecutionEnvironment::new();
    let mut config = Configuration::new();
    config
        .set("weir.exchange.batch-size", BATCH.to_string())
        .set("weir.exchange.channel-capacity", CAPACITY.to_string());
    env.configure(&config)?;
    let produced = Arc::new(AtomicU64::new(0));
    let consumed = Arc::new(AtomicU64::new(0));
    let (p, c) = (Arc::clone(&produced), Arc::clone(&consumed));
    env.add_parallel_source(GeneratorSource::unbounded(|i| i), "fast")
        .map(move |x: u64| {
            p.fetch_add(1, Ordering::SeqCst);
            x
        })
        .rebalance()
        .add_sink(move |_x: u64| {
            c.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_micros(50));
            Ok(())
        });
    let client = env.execute_async("back-pressure")?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while consumed.load(Ordering::SeqCst) < 5_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Both counts at one moment: `produced` read while `consumed` did not
    // move (read before and after), so the gap is what was in flight then,
    // not inflated by records consumed between two reads.
    let (p, c) = loop {
        let before = consumed.load(Ordering::SeqCst);
        let p = produced.load(Ordering::SeqCst);
        if consumed.load(Ordering::SeqCst) == before {
            break (p, before);
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(10),
            "no quiet moment"
        );
    };
    client.cancel();
    let _ = client.wait();
    assert!(c >= 5_000, "the sink made no progress");
    // In flight at most: the channel's batches, the writer's partial batch,
    // the batch the sink is working on, and one source poll.
    let bound = (CAPACITY + 3) * BATCH + 1024;
    assert!(
        p - c <= bound,
        "produced {p}, consumed {c}: {} buffered > {bound}",
        p - c
    );
    Ok(())
}

#[test]
fn an_empty_program_is_rejected() {
    let env = StreamExecutionEnvironment::new();
    let err = env
        .execute("empty")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("no operators"), "{err}");
}

#[test]
fn a_zero_parallelism_is_rejected() {
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(0, 1)
        .map(|x: i64| x)
        .set_parallelism(0)
        .add_sink(DiscardingSink);
    assert!(matches!(
        env.execute("zero"),
        Err(weir::Error::InvalidJob(_))
    ));
}

#[test]
fn a_non_parallel_source_cannot_run_in_parallel() {
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1])
        .set_parallelism(2)
        .add_sink(DiscardingSink);
    let err = env
        .execute("p")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("not a parallel operator"), "{err}");
}

#[test]
fn buffer_timeout_zero_and_none_deliver_everything() -> anyhow::Result<()> {
    for zero in [true, false] {
        let env = StreamExecutionEnvironment::new();
        if zero {
            env.set_buffer_timeout(Duration::ZERO);
        } else {
            env.disable_buffer_timeout();
        }
        let out = env
            .from_sequence(1, 3000)
            .rebalance()
            .execute_and_collect()?;
        assert_eq!(out, (1..=3000).collect::<Vec<_>>());
    }
    Ok(())
}

/// The name of the task (thread) each record of a three-map chain passed
/// through, per map, with `start_new_chain` on the second map or not.
fn tasks_of_maps(new_chain: bool) -> anyhow::Result<Vec<String>> {
    let env = StreamExecutionEnvironment::new();
    let task = || std::thread::current().name().unwrap_or("").to_string();
    let first = env
        .from_sequence(1, 3)
        .map(move |x: i64| (x, task(), String::new(), String::new()));
    let second = first.map(move |t: (i64, String, String, String)| (t.0, t.1, task(), t.3));
    let second = if new_chain {
        second.start_new_chain()
    } else {
        second
    };
    let out = second
        .map(move |t: (i64, String, String, String)| (t.0, t.1, t.2, task()))
        .execute_and_collect()?;
    let (_, a, b, c) = out.into_iter().next().ok_or(anyhow::anyhow!("no output"))?;
    Ok(vec![a, b, c])
}

#[test]
fn start_new_chain_begins_a_task_at_its_operator() -> anyhow::Result<()> {
    let chained = tasks_of_maps(false)?;
    assert!(chained[0].starts_with("Source: "), "{chained:?}");
    assert!(chained.iter().all(|t| t == &chained[0]), "{chained:?}");

    let split = tasks_of_maps(true)?;
    // The source and the first map; then the second and third maps, chained
    // together in a task of their own.
    assert!(split[0].starts_with("Source: "), "{split:?}");
    assert_eq!(split[1], "Map -> Map -> Collect Sink (1/1)", "{split:?}");
    assert_eq!(split[1], split[2]);
    Ok(())
}

/// The task (thread) of the source's map and of the map after a `key_by`,
/// both at parallelism 1, with keyed exchanges chained or not.
fn tasks_around_key_by(chain_keyed: Option<&str>) -> anyhow::Result<(String, String)> {
    let env = StreamExecutionEnvironment::new();
    if let Some(value) = chain_keyed {
        let mut config = Configuration::new();
        config.set(weir::config::keys::CHAIN_KEYED_EXCHANGES, value);
        env.configure(&config)?;
    }
    let task = || std::thread::current().name().unwrap_or("").to_string();
    let out = env
        .from_sequence(1, 3)
        .map(move |x: i64| (x, task()))
        .key_by(|t: &(i64, String)| t.0 % 2)
        .map(move |t: (i64, String)| (t.1, task()))
        .execute_and_collect()?;
    out.into_iter().next().ok_or(anyhow::anyhow!("no output"))
}

/// Tags each record with whether its operator heads its task, as its
/// context said when it was opened.
#[derive(Clone, Default)]
struct HeadsTask(bool);

impl KeyedProcessFunction<i64, (i64, Vec<bool>), (i64, Vec<bool>)> for HeadsTask {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.0 = ctx.heads_task;
        Ok(())
    }

    fn process_element(
        &mut self,
        (x, mut heads): (i64, Vec<bool>),
        _ctx: &mut ProcessContext<'_, i64>,
        out: &mut Collector<'_, (i64, Vec<bool>)>,
    ) -> FunctionResult {
        heads.push(self.0);
        out.collect((x, heads));
        Ok(())
    }
}

/// Whether each of two keyed operators in a row heads its task, with keyed
/// exchanges chained (`"true"`) or not.
fn heads_of_keyed_operators(chain_keyed: &str) -> anyhow::Result<Vec<bool>> {
    let env = StreamExecutionEnvironment::new();
    let mut config = Configuration::new();
    config.set(weir::config::keys::CHAIN_KEYED_EXCHANGES, chain_keyed);
    env.configure(&config)?;
    let out = env
        .from_sequence(1, 3)
        .map(|x: i64| (x, Vec::new()))
        .key_by(|t: &(i64, Vec<bool>)| t.0 % 2)
        .process(HeadsTask::default())
        .key_by(|t: &(i64, Vec<bool>)| t.0 % 3)
        .process(HeadsTask::default())
        .execute_and_collect()?;
    let (_, heads) = out.into_iter().next().ok_or(anyhow::anyhow!("no output"))?;
    Ok(heads)
}

/// An operator's context says whether its input was made on other threads
/// (it heads its task) or by the operator before it in its chain.
#[test]
fn an_operators_context_says_whether_it_heads_its_task() -> anyhow::Result<()> {
    assert_eq!(heads_of_keyed_operators("false")?, [true, true]);
    assert_eq!(heads_of_keyed_operators("true")?, [false, false]);
    Ok(())
}

#[test]
fn a_keyed_exchange_at_parallelism_one_is_chained_unless_configured_not_to_be() -> anyhow::Result<()>
{
    let (before, after) = tasks_around_key_by(Some("true"))?;
    assert!(before.starts_with("Source: "), "{before}");
    assert_eq!(before, after);
    // Flink's topology: a task on each side of the exchange.
    let (before, after) = tasks_around_key_by(Some("false"))?;
    assert!(before.starts_with("Source: "), "{before}");
    assert!(after.starts_with("Map -> Collect Sink"), "{after}");
    // By default, a job of one chain is split where a second core would
    // otherwise be idle.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    for default in [None, Some("auto"), Some("AUTO")] {
        let (before, after) = tasks_around_key_by(default)?;
        assert!(before.starts_with("Source: "), "{before}");
        assert_eq!(
            before == after,
            cores == 1,
            "{before} / {after}, {cores} cores"
        );
    }
    // A misspelt value is an error, not the default.
    let env = StreamExecutionEnvironment::new();
    let mut config = Configuration::new();
    config.set(weir::config::keys::CHAIN_KEYED_EXCHANGES, "flase");
    assert!(env.configure(&config).is_err());
    Ok(())
}
