//! Every transformation of the DataStream API, on small bounded inputs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use weir::prelude::*;

use crate::sorted;

#[test]
fn map_filter_flat_map() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_elements(vec!["a b", "c", "", "d e f"])
        .flat_map(|line: &str, out: &mut Collector<String>| {
            for w in line.split_whitespace() {
                out.collect(w.to_string());
            }
        })
        .map(|w: String| w.to_uppercase())
        .filter(|w: &String| w != "C")
        .execute_and_collect()?;
    assert_eq!(out, vec!["A", "B", "D", "E", "F"]);
    Ok(())
}

#[test]
fn from_iter_and_collection_keep_order() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_iter((0..5000).map(|i| i * 3))
        .execute_and_collect()?;
    assert_eq!(out, (0..5000).map(|i| i * 3).collect::<Vec<i32>>());
    Ok(())
}

#[test]
fn keyed_reduce_is_a_rolling_reduce() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_elements(
            [("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)].map(|(k, v)| (k.to_string(), v)),
        )
        .key_by(|(k, _)| k.clone())
        .reduce(|(k, x), (_, y)| (k, x + y))
        .execute_and_collect()?;
    let out: Vec<(&str, i32)> = out.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        out,
        vec![("a", 1), ("b", 10), ("a", 3), ("a", 6), ("b", 30)]
    );
    Ok(())
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Reading {
    city: String,
    district: String,
    value: i64,
}

fn readings() -> Vec<Reading> {
    let r = |city: &str, district: &str, value| Reading {
        city: city.to_string(),
        district: district.to_string(),
        value,
    };
    vec![
        r("sz", "nanshan", 5),
        r("sz", "futian", 3),
        r("bj", "haidian", 7),
        r("sz", "luohu", 9),
        r("sz", "baoan", 9),
        r("bj", "chaoyang", 1),
    ]
}

#[test]
fn sum_min_max_keep_the_first_records_other_fields() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let input = env.from_elements(readings());
    let keyed = input.key_by(|r| r.city.clone());
    let sums = keyed.sum(|r| &mut r.value).execute_and_collect()?;
    let got: Vec<_> = sums
        .iter()
        .map(|r| (r.city.as_str(), r.district.as_str(), r.value))
        .collect();
    assert_eq!(
        got,
        vec![
            ("sz", "nanshan", 5),
            ("sz", "nanshan", 8),
            ("bj", "haidian", 7),
            ("sz", "nanshan", 17),
            ("sz", "nanshan", 26),
            ("bj", "haidian", 8),
        ]
    );

    let keyed = env.from_elements(readings()).key_by(|r| r.city.clone());
    let maxes = keyed.max(|r| &mut r.value).execute_and_collect()?;
    let got: Vec<_> = maxes
        .iter()
        .map(|r| (r.district.as_str(), r.value))
        .collect();
    assert_eq!(
        got,
        vec![
            ("nanshan", 5),
            ("nanshan", 5),
            ("haidian", 7),
            ("nanshan", 9),
            ("nanshan", 9),
            ("haidian", 7),
        ]
    );

    let keyed = env.from_elements(readings()).key_by(|r| r.city.clone());
    let mins = keyed.min(|r| &mut r.value).execute_and_collect()?;
    let got: Vec<_> = mins
        .iter()
        .map(|r| (r.district.as_str(), r.value))
        .collect();
    assert_eq!(got[1], ("nanshan", 3));
    assert_eq!(got[5], ("haidian", 1));
    Ok(())
}

#[test]
fn min_by_max_by_keep_whole_records_first_on_ties() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let keyed = env.from_elements(readings()).key_by(|r| r.city.clone());
    let max_by = keyed.max_by(|r| r.value).execute_and_collect()?;
    let got: Vec<_> = max_by
        .iter()
        .map(|r| (r.district.as_str(), r.value))
        .collect();
    // "baoan" ties "luohu" at 9: the earlier record stays.
    assert_eq!(
        got,
        vec![
            ("nanshan", 5),
            ("nanshan", 5),
            ("haidian", 7),
            ("luohu", 9),
            ("luohu", 9),
            ("haidian", 7),
        ]
    );
    let keyed = env.from_elements(readings()).key_by(|r| r.city.clone());
    let min_by = keyed.min_by(|r| r.value).execute_and_collect()?;
    let got: Vec<_> = min_by.iter().map(|r| r.district.as_str()).collect();
    assert_eq!(
        got,
        vec!["nanshan", "futian", "haidian", "futian", "futian", "chaoyang"]
    );
    Ok(())
}

#[test]
fn process_sees_timestamps_and_writes_side_outputs() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let odd = OutputTag::<String>::new("odd");
    let tag = odd.clone();
    let main = env.from_sequence(1, 6).process(
        move |n: i64, ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, i64>| {
            // Records from a collection carry no timestamp.
            assert_eq!(ctx.timestamp(), None);
            if n % 2 == 0 {
                out.collect(n * 10);
            } else {
                ctx.output(&tag, format!("odd {n}"));
            }
            Ok(())
        },
    );
    let side = Arc::new(std::sync::Mutex::new(Vec::new()));
    let side_sink = Arc::clone(&side);
    main.get_side_output(&odd).add_sink(move |s: String| {
        side_sink.lock().map_err(|_| "poisoned")?.push(s);
        Ok(())
    });
    let out = main.execute_and_collect()?;
    assert_eq!(out, vec![20, 40, 60]);
    let side = side
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    assert_eq!(side, vec!["odd 1", "odd 3", "odd 5"]);
    Ok(())
}

#[test]
fn keyed_process_knows_the_current_key() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_elements(vec!["apple", "avocado", "banana"])
        .key_by(|s: &&str| s.chars().next().unwrap_or(' '))
        .process(
            |s: &str, ctx: &mut ProcessContext<'_, char>, out: &mut Collector<'_, String>| {
                out.collect(format!("{}:{s}", ctx.get_current_key()));
                Ok(())
            },
        )
        .execute_and_collect()?;
    assert_eq!(out, vec!["a:apple", "a:avocado", "b:banana"]);
    Ok(())
}

#[test]
fn union_merges_streams() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let a = env.from_elements(vec![1, 2]);
    let b = env.from_elements(vec![3]);
    let c = env.from_sequence(4, 5).map(|x: i64| x as i32);
    let out = a.union(&[b, c]).execute_and_collect()?;
    assert_eq!(sorted(out), vec![1, 2, 3, 4, 5]);
    Ok(())
}

#[test]
fn connect_co_map_and_co_flat_map() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let numbers = env.from_elements(vec![1i64, 2]);
    let words = env.from_elements(vec!["x".to_string(), "yy".to_string()]);
    let out = numbers
        .connect(&words)
        .map(|n: i64| format!("n{n}"), |w: String| format!("w{w}"))
        .execute_and_collect()?;
    assert_eq!(sorted(out), vec!["n1", "n2", "wx", "wyy"]);

    let out = env
        .from_elements(vec![3i64])
        .connect(&env.from_elements(vec!["ab".to_string()]))
        .flat_map(
            |n: i64, out: &mut Collector<i64>| (0..n).for_each(|i| out.collect(i)),
            |w: String, out: &mut Collector<i64>| out.collect(w.len() as i64 * 100),
        )
        .execute_and_collect()?;
    assert_eq!(sorted(out), vec![0, 1, 2, 200]);
    Ok(())
}

/// Joins a stream of names to a stream of scores by key, across two inputs.
#[derive(Clone, Default)]
struct Enrich {
    names: std::collections::HashMap<u32, String>,
    pending: Vec<(u32, i64)>,
}

impl CoProcessFunction<(u32, String), (u32, i64), String> for Enrich {
    fn process_element1(
        &mut self,
        (id, name): (u32, String),
        _ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let (ready, waiting): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|(i, _)| *i == id);
        self.pending = waiting;
        for (_, score) in ready {
            out.collect(format!("{name}={score}"));
        }
        self.names.insert(id, name);
        Ok(())
    }

    fn process_element2(
        &mut self,
        (id, score): (u32, i64),
        _ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        match self.names.get(&id) {
            Some(name) => out.collect(format!("{name}={score}")),
            None => self.pending.push((id, score)),
        }
        Ok(())
    }
}

#[test]
fn keyed_connect_process_meets_both_sides_at_parallelism_3() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(3);
    let names = env.from_elements((0..50u32).map(|i| (i, format!("u{i}"))).collect::<Vec<_>>());
    let scores = env.from_elements(
        (0..50u32)
            .map(|i| (i, i64::from(i) * 2))
            .collect::<Vec<_>>(),
    );
    let out = names
        .connect(&scores)
        .key_by(|(id, _)| *id, |(id, _)| *id)
        .process(Enrich::default())
        .execute_and_collect()?;
    let expected: Vec<String> = (0..50).map(|i| format!("u{i}={}", i * 2)).collect();
    assert_eq!(sorted(out), sorted(expected));
    Ok(())
}

/// A rich map: counts its records and learns its subtask in `open`.
#[derive(Clone, Default)]
struct Tagger {
    subtask: u32,
    parallelism: u32,
    opened: Arc<AtomicU32>,
    closed: Arc<AtomicU32>,
}

impl MapFunction<i64, (u32, i64)> for Tagger {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index;
        self.parallelism = ctx.parallelism;
        assert_eq!(ctx.operator_name, "tagger");
        self.opened.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn map(&mut self, value: i64) -> (u32, i64) {
        assert_eq!(self.parallelism, 3);
        (self.subtask, value)
    }

    fn close(&mut self) -> FunctionResult {
        self.closed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn rich_functions_open_and_close_once_per_subtask() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let tagger = Tagger::default();
    let (opened, closed) = (Arc::clone(&tagger.opened), Arc::clone(&tagger.closed));
    let out = env
        .from_sequence(0, 299)
        .rebalance()
        .map(tagger)
        .name("tagger")
        .set_parallelism(3)
        .execute_and_collect()?;
    assert_eq!(opened.load(Ordering::SeqCst), 3);
    assert_eq!(closed.load(Ordering::SeqCst), 3);
    assert_eq!(out.len(), 300);
    for subtask in 0..3 {
        assert_eq!(out.iter().filter(|(s, _)| *s == subtask).count(), 100);
    }
    Ok(())
}

#[test]
fn names_and_uids_show_in_the_job_result() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(1, 1000)
        .filter(|x: &i64| x % 10 == 0)
        .name("tenths")
        .uid("tenths-uid")
        .add_sink(DiscardingSink)
        .name("drop");
    let result = env.execute("named")?;
    assert_eq!(result.job_name, "named");
    let filter = result
        .operator("tenths")
        .ok_or_else(|| anyhow::anyhow!("no filter"))?;
    assert_eq!(filter.uid.as_deref(), Some("tenths-uid"));
    assert_eq!((filter.records_in, filter.records_out), (1000, 100));
    let sink = result
        .operator("drop")
        .ok_or_else(|| anyhow::anyhow!("no sink"))?;
    assert_eq!(sink.records_in, 100);
    assert_eq!(result.job_id.to_string().len(), 32);
    Ok(())
}
