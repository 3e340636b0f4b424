//! Where records go: each partitioning, observed by the receiving subtask.

use weir::prelude::*;
use weir_state::{assign_to_key_group, operator_index_for_key_group};

use crate::sorted;

/// Tags every record with the index of the subtask that received it.
#[derive(Clone, Default)]
struct Subtask(u32);

impl<T: Send + 'static> MapFunction<T, (u32, T)> for Subtask {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.0 = ctx.subtask_index;
        Ok(())
    }
    fn map(&mut self, value: T) -> (u32, T) {
        (self.0, value)
    }
}

fn counts_per_subtask(out: &[(u32, i64)], n: u32) -> Vec<usize> {
    (0..n)
        .map(|s| out.iter().filter(|(t, _)| *t == s).count())
        .collect()
}

#[test]
fn forward_keeps_records_in_their_subtask() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let out = env
        .from_sequence(0, 99)
        .map(Subtask::default())
        .forward()
        .map(|(up, v): (u32, i64)| (up, v))
        .disable_chaining()
        .map(Subtask::default())
        .execute_and_collect()?;
    // The sequence is split in halves; forward keeps each half in place.
    assert_eq!(out.len(), 100);
    assert_eq!(
        (0..2)
            .map(|s| out.iter().filter(|(d, _)| *d == s).count())
            .collect::<Vec<_>>(),
        vec![50, 50]
    );
    for (down, (up, v)) in out {
        assert_eq!(down, up);
        assert_eq!(u32::from(v >= 50), up);
    }
    Ok(())
}

#[test]
fn forward_with_a_change_of_parallelism_is_rejected() {
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(0, 9)
        .forward()
        .map(|x: i64| x)
        .set_parallelism(2)
        .add_sink(DiscardingSink);
    let err = env.execute("bad forward").err().map(|e| e.to_string());
    let err = err.unwrap_or_default();
    assert!(err.contains("forward partitioning"), "{err}");
}

#[test]
fn rebalance_spreads_evenly() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_sequence(0, 399)
        .rebalance()
        .map(Subtask::default())
        .set_parallelism(4)
        .execute_and_collect()?;
    assert_eq!(counts_per_subtask(&out, 4), vec![100, 100, 100, 100]);
    Ok(())
}

#[test]
fn rescale_sends_to_a_local_group() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_sequence(0, 399)
        .set_parallelism(2)
        .map(Subtask::default())
        .set_parallelism(2)
        .rescale()
        .map(Subtask::default())
        .set_parallelism(4)
        .execute_and_collect()?;
    for (down, (up, _)) in &out {
        // Upstream 0 feeds downstream 0 and 1; upstream 1 feeds 2 and 3.
        assert_eq!(down / 2, *up);
    }
    let per_down: Vec<usize> = (0..4)
        .map(|s| out.iter().filter(|(d, _)| *d == s).count())
        .collect();
    assert_eq!(per_down, vec![100, 100, 100, 100]);
    Ok(())
}

#[test]
fn shuffle_reaches_every_subtask() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_sequence(0, 3999)
        .shuffle()
        .map(Subtask::default())
        .set_parallelism(4)
        .execute_and_collect()?;
    let counts = counts_per_subtask(&out, 4);
    assert!(counts.iter().all(|&c| c > 700), "{counts:?}");
    assert_eq!(
        sorted(out.iter().map(|(_, v)| *v).collect()),
        (0..4000).collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn broadcast_copies_to_every_subtask() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_sequence(1, 10)
        .broadcast()
        .map(Subtask::default())
        .set_parallelism(3)
        .execute_and_collect()?;
    assert_eq!(out.len(), 30);
    assert_eq!(counts_per_subtask(&out, 3), vec![10, 10, 10]);
    Ok(())
}

#[test]
fn partition_custom_uses_the_users_function() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_sequence(0, 99)
        .partition_custom(|k: &i64, _n| (*k % 10) as usize, |x: &i64| *x)
        .map(Subtask::default())
        .set_parallelism(3)
        .execute_and_collect()?;
    assert_eq!(
        sorted(out.iter().map(|(_, v)| *v).collect()),
        (0..100).collect::<Vec<_>>()
    );
    for (down, v) in out {
        assert_eq!(down as i64, (v % 10) % 3);
    }
    Ok(())
}

#[test]
fn key_by_routes_by_key_group() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(4);
    let out = env
        .from_sequence(0, 999)
        .key_by(|x: &i64| x % 37)
        .map(Subtask::default())
        .execute_and_collect()?;
    assert_eq!(out.len(), 1000);
    for (down, v) in out {
        let kg = assign_to_key_group(&(v % 37), 128);
        assert_eq!(
            down,
            operator_index_for_key_group(128, 4, kg),
            "key {}",
            v % 37
        );
    }
    Ok(())
}

#[test]
fn key_by_follows_a_changed_max_parallelism() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(3).set_max_parallelism(16);
    let out = env
        .from_sequence(0, 99)
        .key_by(|x: &i64| *x)
        .map(Subtask::default())
        .execute_and_collect()?;
    assert_eq!(
        sorted(out.iter().map(|(_, v)| *v).collect()),
        (0..100).collect::<Vec<_>>()
    );
    for (down, v) in out {
        let kg = assign_to_key_group(&v, 16);
        assert_eq!(down, operator_index_for_key_group(16, 3, kg));
    }
    Ok(())
}
