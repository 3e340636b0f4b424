//! Window joins, co-groups and interval joins.

use proptest::prelude::*;
use weir::prelude::*;

use crate::sorted;

fn timed<T: Clone + Send + Sync + 'static>(
    env: &StreamExecutionEnvironment,
    items: Vec<(T, i64)>,
) -> DataStream<(T, i64)> {
    env.from_collection(items).assign_timestamps_and_watermarks(
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|e: &(T, i64), _| e.1),
    )
}

#[test]
fn window_join_pairs_records_of_a_key_within_a_window() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let pairs = |v: Vec<((&str, &str), i64)>| -> Vec<((String, String), i64)> {
        v.into_iter()
            .map(|((a, b), t)| ((a.to_string(), b.to_string()), t))
            .collect()
    };
    let orders = timed(
        &env,
        pairs(vec![
            (("o1", "alice"), 1_000),
            (("o2", "bob"), 2_000),
            (("o3", "alice"), 12_000),
        ]),
    );
    let clicks = timed(
        &env,
        pairs(vec![
            (("alice", "home"), 500),
            (("alice", "cart"), 9_000),
            (("carol", "x"), 1_000),
            (("alice", "pay"), 11_000),
        ]),
    );
    let out = orders
        .join(&clicks)
        .where_(|o| o.0 .1.to_string())
        .equal_to(|c| c.0 .0.to_string())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .apply(|o: &((String, String), i64), c: &((String, String), i64)| {
            format!("{}-{}", o.0 .0, c.0 .1)
        })
        .execute_and_collect()?;
    // bob and carol have no partner: an inner join drops them.
    assert_eq!(sorted(out), vec!["o1-cart", "o1-home", "o3-pay"]);
    Ok(())
}

#[test]
fn co_group_sees_both_sides_even_when_one_is_empty() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let owned = |v: Vec<(&str, i64)>| -> Vec<(String, i64)> {
        v.into_iter().map(|(k, t)| (k.to_string(), t)).collect()
    };
    let a = timed(&env, owned(vec![("x", 1), ("x", 2), ("y", 3)]));
    let b = timed(&env, owned(vec![("x", 5), ("z", 6)]));
    let out = a
        .co_group(&b)
        .where_(|e| e.0.to_string())
        .equal_to(|e| e.0.to_string())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(1)))
        .apply(
            |k: &String,
             left: Vec<&(String, i64)>,
             right: Vec<&(String, i64)>,
             out: &mut Collector<'_, String>| {
                out.collect(format!("{k}:{}/{}", left.len(), right.len()));
            },
        )
        .execute_and_collect()?;
    assert_eq!(sorted(out), vec!["x:2/1", "y:1/0", "z:0/1"]);
    Ok(())
}

fn interval_join(
    left: Vec<(u8, i64)>,
    right: Vec<(u8, i64)>,
    lower: i64,
    upper: i64,
    exclusive: (bool, bool),
) -> anyhow::Result<Vec<(i64, i64)>> {
    let env = StreamExecutionEnvironment::new();
    // No watermarks until the end: nothing is late, every pair is found.
    let strategy =
        || WatermarkStrategy::no_watermarks().with_timestamp_assigner(|e: &(u8, i64), _| e.1);
    let l = env
        .from_collection(left)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|e| e.0);
    let r = env
        .from_collection(right)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|e| e.0);
    let mut joined = l.interval_join(&r).between(lower, upper);
    if exclusive.0 {
        joined = joined.lower_bound_exclusive();
    }
    if exclusive.1 {
        joined = joined.upper_bound_exclusive();
    }
    let out = joined
        .process(
            |a: &(u8, i64),
             b: &(u8, i64),
             ctx: &ProcessJoinContext,
             out: &mut Collector<'_, (i64, i64)>| {
                assert_eq!(ctx.timestamp(), a.1.max(b.1));
                out.collect((a.1, b.1));
                Ok(())
            },
        )
        .execute_and_collect()?;
    Ok(sorted(out))
}

#[test]
fn interval_join_honours_bounds_and_exclusions() -> anyhow::Result<()> {
    let left = vec![(1, 10), (1, 20), (2, 10)];
    let right = vec![(1, 8), (1, 10), (1, 12), (1, 15), (1, 30), (2, 100)];
    assert_eq!(
        interval_join(left.clone(), right.clone(), -2, 2, (false, false))?,
        vec![(10, 8), (10, 10), (10, 12)]
    );
    assert_eq!(
        interval_join(left.clone(), right.clone(), -2, 2, (true, true))?,
        vec![(10, 10)]
    );
    assert_eq!(
        interval_join(left.clone(), right.clone(), 0, 10, (false, false))?,
        vec![(10, 10), (10, 12), (10, 15), (20, 30)]
    );
    // One point, excluded: valid bounds (checked before exclusivity, as
    // Flink does) that join nothing, from either side.
    assert_eq!(
        interval_join(left.clone(), right.clone(), 5, 5, (true, false))?,
        vec![]
    );
    assert_eq!(
        interval_join(left.clone(), right.clone(), 0, 0, (true, true))?,
        vec![]
    );
    assert_eq!(
        interval_join(left.clone(), right.clone(), 0, 0, (false, false))?,
        vec![(10, 10)]
    );
    let err = interval_join(left, right, 3, 2, (false, false))
        .expect_err("lower above upper")
        .to_string();
    assert!(
        err.contains("lower bound 3 ms is above upper bound 2 ms"),
        "{err}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn interval_join_equals_the_brute_force_join(
        left in proptest::collection::vec((0u8..3, 0i64..100), 0..30),
        right in proptest::collection::vec((0u8..3, 0i64..100), 0..30),
        lower in -20i64..10,
        width in 0i64..30,
    ) {
        let upper = lower + width;
        let mut expected: Vec<(i64, i64)> = Vec::new();
        for a in &left {
            for b in &right {
                if a.0 == b.0 && a.1 + lower <= b.1 && b.1 <= a.1 + upper {
                    expected.push((a.1, b.1));
                }
            }
        }
        expected.sort();
        let actual = interval_join(left, right, lower, upper, (false, false)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(actual, expected);
    }
}
