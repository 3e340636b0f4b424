//! The keyed-state conformance suite: every state kind, through the public
//! API of a [`KeyedStateStore`]. Each backend instantiates the same tests
//! with `conformance!`, so a backend passes exactly when it behaves like
//! the others.

use weir_state::{
    key_group_range_for_operator, AggregatingStateDescriptor, KeyGroupRange, KeyedStateStore,
    ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, StateError,
    ValueStateDescriptor,
};

/// The whole key-group range of 128 key groups.
pub fn all_groups() -> KeyGroupRange {
    KeyGroupRange { start: 0, end: 127 }
}

macro_rules! conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            fn store(range: KeyGroupRange) -> KeyedStateStore {
                let make: fn(u32, KeyGroupRange) -> KeyedStateStore = $make;
                make(128, range)
            }

            #[test]
            fn value_state_is_per_key() -> Result<(), StateError> {
                let s = store(all_groups());
                let v = s.value_state(&ValueStateDescriptor::<i64>::new("max"))?;
                s.set_current_key("a")?;
                assert_eq!(v.value()?, None);
                v.update(5)?;
                s.set_current_key("b")?;
                assert_eq!(v.value()?, None);
                v.update(7)?;
                s.set_current_key("a")?;
                assert_eq!(v.value()?, Some(5));
                v.clear()?;
                assert_eq!(v.value()?, None);
                s.set_current_key("b")?;
                assert_eq!(v.value()?, Some(7));
                assert_eq!(s.len("max")?, 1);
                Ok(())
            }

            #[test]
            fn list_state_adds_and_replaces() -> Result<(), StateError> {
                let s = store(all_groups());
                let l = s.list_state(&ListStateDescriptor::<String>::new("seen"))?;
                s.set_current_key(&1u64)?;
                assert!(l.get()?.is_empty());
                l.add("x".into())?;
                l.add_all(["y".to_string(), "z".to_string()])?;
                assert_eq!(l.get()?, vec!["x", "y", "z"]);
                l.update(vec!["only".into()])?;
                assert_eq!(l.get()?, vec!["only"]);
                s.set_current_key(&2u64)?;
                assert!(l.get()?.is_empty());
                Ok(())
            }

            #[test]
            fn map_state_has_the_map_operations() -> Result<(), StateError> {
                let s = store(all_groups());
                let m = s.map_state(&MapStateDescriptor::<String, i32>::new("m"))?;
                s.set_current_key("k")?;
                assert!(m.is_empty()?);
                m.put("a".into(), 1)?;
                m.put_all([("b".to_string(), 2), ("c".to_string(), 3)])?;
                assert_eq!(m.get(&"b".into())?, Some(2));
                assert!(m.contains(&"c".into())?);
                m.remove(&"c".into())?;
                assert!(!m.contains(&"c".into())?);
                let mut keys = m.keys()?;
                keys.sort();
                assert_eq!(keys, vec!["a", "b"]);
                let mut values = m.values()?;
                values.sort();
                assert_eq!(values, vec![1, 2]);
                assert_eq!(m.entries()?.len(), 2);
                s.set_current_key("other")?;
                assert!(m.is_empty()?);
                Ok(())
            }

            #[test]
            fn reducing_and_aggregating_state_fold() -> Result<(), StateError> {
                let s = store(all_groups());
                let r =
                    s.reducing_state(&ReducingStateDescriptor::new("sum", |a: i64, b: i64| a + b))?;
                let avg = s.aggregating_state(&AggregatingStateDescriptor::new(
                    "avg",
                    || (0i64, 0i64),
                    |x: i64, acc: &mut (i64, i64)| {
                        acc.0 += x;
                        acc.1 += 1;
                    },
                    |acc: &(i64, i64)| acc.0 as f64 / acc.1 as f64,
                ))?;
                s.set_current_key("k")?;
                for x in [2, 4, 9] {
                    r.add(x)?;
                    avg.add(x)?;
                }
                assert_eq!(r.get()?, Some(15));
                assert_eq!(avg.get()?, Some(5.0));
                r.clear()?;
                avg.clear()?;
                assert_eq!(r.get()?, None);
                assert_eq!(avg.get()?, None);
                Ok(())
            }

            #[test]
            fn state_without_a_current_key_is_an_error() -> Result<(), StateError> {
                let s = store(all_groups());
                let v = s.value_state(&ValueStateDescriptor::<i64>::new("v"))?;
                assert!(matches!(v.value(), Err(StateError::NotKeyed(_))));
                Ok(())
            }

            #[test]
            fn a_name_registered_twice_must_agree() -> Result<(), StateError> {
                let s = store(all_groups());
                s.value_state(&ValueStateDescriptor::<i64>::new("x"))?;
                // The same declaration again is fine (e.g. two functions).
                s.value_state(&ValueStateDescriptor::<i64>::new("x"))?;
                let clash = s.list_state(&ListStateDescriptor::<i64>::new("x"));
                assert!(matches!(clash, Err(StateError::Conflict { .. })));
                let clash = s.value_state(&ValueStateDescriptor::<String>::new("x"));
                assert!(matches!(clash, Err(StateError::Conflict { .. })));
                Ok(())
            }

            #[test]
            fn snapshots_by_key_group_restore_at_another_parallelism() -> Result<(), StateError> {
                // One subtask holds every key; two take over half each.
                let one = store(key_group_range_for_operator(128, 1, 0));
                let v = one.value_state(&ValueStateDescriptor::<u64>::new("count"))?;
                for k in 0..200u64 {
                    one.set_current_key(&k)?;
                    v.update(k * 10)?;
                }
                let halves: Vec<KeyedStateStore> = (0..2)
                    .map(|i| store(key_group_range_for_operator(128, 2, i)))
                    .collect();
                let handles = halves
                    .iter()
                    .map(|h| h.value_state(&ValueStateDescriptor::<u64>::new("count")))
                    .collect::<Result<Vec<_>, _>>()?;
                for kg in 0..128 {
                    for entry in one.snapshot_key_group(weir_state::KeyGroup(kg))? {
                        for h in &halves {
                            h.restore(&entry)?;
                        }
                    }
                }
                for k in 0..200u64 {
                    let kg = weir_state::assign_to_key_group(&k, 128);
                    let owner = weir_state::operator_index_for_key_group(128, 2, kg) as usize;
                    halves[owner].set_current_key(&k)?;
                    assert_eq!(handles[owner].value()?, Some(k * 10), "key {k}");
                }
                assert_eq!(halves[0].len("count")? + halves[1].len("count")?, 200);
                Ok(())
            }

            #[test]
            fn a_key_outside_the_range_is_rejected() -> Result<(), StateError> {
                let s = store(KeyGroupRange { start: 0, end: 0 });
                s.value_state(&ValueStateDescriptor::<u64>::new("v"))?;
                let outside = (0..1000u64)
                    .find(|k| weir_state::assign_to_key_group(k, 128).0 != 0)
                    .unwrap_or(1);
                assert!(s.set_current_key(&outside).is_err());
                Ok(())
            }
        }
    };
}

conformance!(heap, KeyedStateStore::heap);
