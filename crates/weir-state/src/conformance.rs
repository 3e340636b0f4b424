//! The keyed-state conformance suite: every state kind and TTL behaviour
//! through the public API of a [`KeyedStateStore`](crate::KeyedStateStore).
//! Each backend instantiates the same tests with
//! `keyed_state_conformance!(name, constructor)`, where the constructor is
//! `fn(max_parallelism, KeyGroupRange, SharedClock) -> KeyedStateStore`; a
//! backend conforms exactly when it behaves like the others.

#[macro_export]
macro_rules! keyed_state_conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use std::sync::Arc;
            use std::time::Duration;

            use $crate::{
                key_group_range_for_operator, AggregatingStateDescriptor, KeyGroupRange,
                KeyedStateStore, ListStateDescriptor, ManualClock, MapStateDescriptor,
                ReducingStateDescriptor, SharedClock, StateError, StateTtlConfig, StateVisibility,
                UpdateType, ValueStateDescriptor,
            };

            fn all_groups() -> KeyGroupRange {
                KeyGroupRange { start: 0, end: 127 }
            }

            fn store(range: KeyGroupRange) -> KeyedStateStore {
                store_with_clock(range, Arc::new(ManualClock::new(0)))
            }

            fn store_with_clock(range: KeyGroupRange, clock: SharedClock) -> KeyedStateStore {
                let make: fn(u32, KeyGroupRange, SharedClock) -> KeyedStateStore = $make;
                make(128, range, clock)
            }

            fn ttl_store(
                update: UpdateType,
                visibility: StateVisibility,
            ) -> Result<(ManualClock, KeyedStateStore, $crate::ValueState<i64>), StateError> {
                let clock = ManualClock::new(1_000);
                let s = store_with_clock(all_groups(), Arc::new(clock.clone()));
                let ttl = StateTtlConfig::new_builder(Duration::from_millis(100))
                    .set_update_type(update)
                    .set_state_visibility(visibility)
                    .build();
                let v =
                    s.value_state(&ValueStateDescriptor::<i64>::new("v").enable_time_to_live(ttl))?;
                s.set_current_key("k")?;
                Ok((clock, s, v))
            }

            #[test]
            fn ttl_expires_values_after_the_last_write() -> Result<(), StateError> {
                let (clock, _s, v) = ttl_store(
                    UpdateType::OnCreateAndWrite,
                    StateVisibility::NeverReturnExpired,
                )?;
                v.update(1)?;
                clock.advance(60);
                assert_eq!(v.value()?, Some(1));
                // Reading does not extend the life with OnCreateAndWrite.
                clock.advance(40);
                assert_eq!(v.value()?, None, "expired at 100 ms after the write");
                v.update(2)?;
                clock.advance(99);
                assert_eq!(v.value()?, Some(2));
                Ok(())
            }

            #[test]
            fn ttl_on_read_and_write_extends_on_reads() -> Result<(), StateError> {
                let (clock, _s, v) = ttl_store(
                    UpdateType::OnReadAndWrite,
                    StateVisibility::NeverReturnExpired,
                )?;
                v.update(1)?;
                for _ in 0..5 {
                    clock.advance(60);
                    assert_eq!(v.value()?, Some(1), "each read restarts the 100 ms");
                }
                clock.advance(100);
                assert_eq!(v.value()?, None);
                Ok(())
            }

            #[test]
            fn ttl_can_return_expired_values_until_cleaned_up() -> Result<(), StateError> {
                let (clock, s, v) = ttl_store(
                    UpdateType::OnCreateAndWrite,
                    StateVisibility::ReturnExpiredIfNotCleanedUp,
                )?;
                v.update(7)?;
                clock.advance(500);
                assert_eq!(v.value()?, Some(7), "expired but still stored");
                assert_eq!(s.len("v")?, 1);
                Ok(())
            }

            #[test]
            fn ttl_cleanup_in_full_snapshot_leaves_expired_values_out() -> Result<(), StateError> {
                let clock = ManualClock::new(0);
                let s = store_with_clock(all_groups(), Arc::new(clock.clone()));
                let ttl = StateTtlConfig::new_builder(Duration::from_millis(100))
                    .cleanup_full_snapshot()
                    .build();
                let v =
                    s.value_state(&ValueStateDescriptor::<i64>::new("v").enable_time_to_live(ttl))?;
                s.set_current_key(&1u32)?;
                v.update(1)?;
                clock.advance(50);
                s.set_current_key(&2u32)?;
                v.update(2)?;
                clock.advance(60);
                let entries: usize = (0..128)
                    .map(|kg| s.snapshot_key_group($crate::KeyGroup(kg)).map(|e| e.len()))
                    .sum::<Result<usize, _>>()?;
                assert_eq!(entries, 1, "key 1 expired at 100 ms, key 2 lives to 150 ms");
                Ok(())
            }

            #[test]
            fn list_elements_and_map_entries_expire_one_by_one() -> Result<(), StateError> {
                let clock = ManualClock::new(0);
                let s = store_with_clock(all_groups(), Arc::new(clock.clone()));
                let ttl = StateTtlConfig::new_builder(Duration::from_millis(100)).build();
                let l = s.list_state(
                    &$crate::ListStateDescriptor::<u8>::new("l").enable_time_to_live(ttl),
                )?;
                let m = s.map_state(
                    &$crate::MapStateDescriptor::<String, u8>::new("m").enable_time_to_live(ttl),
                )?;
                s.set_current_key(&1u32)?;
                l.add(1)?;
                m.put("old".into(), 1)?;
                clock.advance(60);
                l.add(2)?;
                m.put("new".into(), 2)?;
                clock.advance(50);
                // At 110 ms the first element and entry are 10 ms past
                // their life; the second ones have 50 ms left.
                assert_eq!(l.get()?, vec![2]);
                let mut seen = Vec::new();
                l.for_each(|v| seen.push(*v))?;
                assert_eq!(seen, vec![2], "elements visited in place expire too");
                assert_eq!(m.keys()?, vec!["new".to_string()]);
                assert_eq!(m.get(&"old".to_string())?, None);
                assert!(m.contains(&"new".to_string())?);
                clock.advance(60);
                assert!(l.get()?.is_empty());
                assert!(m.is_empty()?);
                Ok(())
            }

            #[test]
            fn visiting_a_list_with_on_read_ttl_restarts_its_elements_lives(
            ) -> Result<(), StateError> {
                let clock = ManualClock::new(0);
                let s = store_with_clock(all_groups(), Arc::new(clock.clone()));
                let ttl = StateTtlConfig::new_builder(Duration::from_millis(100))
                    .set_update_type(UpdateType::OnReadAndWrite)
                    .build();
                let l = s.list_state(
                    &$crate::ListStateDescriptor::<u8>::new("l").enable_time_to_live(ttl),
                )?;
                s.set_current_key(&1u32)?;
                l.add(1)?;
                clock.advance(80);
                let mut seen = Vec::new();
                l.for_each(|v| seen.push(*v))?;
                assert_eq!(seen, vec![1]);
                clock.advance(80);
                // Visited at 80 ms, the element lives to 180.
                assert_eq!(l.get()?, vec![1]);
                Ok(())
            }

            #[test]
            fn reading_an_entry_restarts_only_its_life() -> Result<(), StateError> {
                let clock = ManualClock::new(0);
                let s = store_with_clock(all_groups(), Arc::new(clock.clone()));
                let ttl = StateTtlConfig::new_builder(Duration::from_millis(100))
                    .set_update_type(UpdateType::OnReadAndWrite)
                    .build();
                let m = s.map_state(
                    &$crate::MapStateDescriptor::<u8, u8>::new("m").enable_time_to_live(ttl),
                )?;
                s.set_current_key(&1u32)?;
                m.put(1, 1)?;
                m.put(2, 2)?;
                clock.advance(80);
                assert_eq!(m.get(&1)?, Some(1));
                clock.advance(80);
                // Entry 1 was read at 80 ms and lives to 180; entry 2 died
                // at 100.
                assert_eq!(m.entries()?, vec![(1, 1)]);
                Ok(())
            }

            #[test]
            fn a_deferred_snapshot_is_the_state_when_it_was_taken() -> Result<(), StateError> {
                let s = store(all_groups());
                let v = s.value_state(&ValueStateDescriptor::<i64>::new("v"))?;
                let m = s.map_state(&$crate::MapStateDescriptor::<String, u8>::new("m"))?;
                for k in 0..50u32 {
                    s.set_current_key(&k)?;
                    v.update(i64::from(k))?;
                    m.put(format!("e{k}"), 1)?;
                }
                let deferred = s.snapshot_deferred(false)?;
                let now = s.snapshot()?;
                // Changes after it was taken do not reach it.
                s.set_current_key(&7u32)?;
                v.update(-1)?;
                let mut later = deferred.encode()?;
                let mut expected = now;
                for states in [&mut later, &mut expected] {
                    states.sort_by(|a, b| a.name.cmp(&b.name));
                    for st in states.iter_mut() {
                        st.entries.sort();
                    }
                }
                assert_eq!(later, expected);
                assert_eq!(later.iter().map(|s| s.entries.len()).sum::<usize>(), 100);
                Ok(())
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

            /// A key encoded where it was made (a bundle's keys, gathered
            /// on another thread) reaches the state its key does, prepared
            /// or set.
            #[test]
            fn keys_encoded_elsewhere_reach_their_own_state() -> Result<(), StateError> {
                use $crate::StableHash;
                let s = store(all_groups());
                let v = s.value_state(&ValueStateDescriptor::<String>::new("v"))?;
                let long = "a key of more than eight bytes";
                for key in ["a", "bb", long] {
                    s.set_current_key(key)?;
                    v.update(key.to_uppercase())?;
                }
                let mut encoded = Vec::new();
                let mut keys = Vec::new();
                for key in ["bb", "c", long, "a"] {
                    let start = encoded.len();
                    $crate::append_key(key, &mut encoded)?;
                    keys.push((start..encoded.len(), key.stable_hash()));
                }
                let of = |i: usize| (&encoded[keys[i].0.clone()], keys[i].1);
                s.prepare_encoded_keys((0..keys.len()).map(of))?;
                let expected = [
                    Some("BB".to_string()),
                    None,
                    Some(long.to_uppercase()),
                    Some("A".into()),
                ];
                for (i, value) in expected.iter().enumerate() {
                    let (key, hash) = of(i);
                    s.set_prepared_encoded_key(i, key, hash)?;
                    assert_eq!(&v.value()?, value, "prepared key {i}");
                }
                let (c, hash) = of(1);
                s.set_current_hashed_key(c, hash)?;
                v.update("C".into())?;
                s.set_current_key("a")?;
                assert_eq!(v.value()?.as_deref(), Some("A"));
                s.set_current_key("c")?;
                assert_eq!(
                    v.value()?.as_deref(),
                    Some("C"),
                    "written through its encoding"
                );
                Ok(())
            }

            #[test]
            fn value_state_changes_in_place() -> Result<(), StateError> {
                use $crate::ValueChange;
                let s = store(all_groups());
                let v = s.value_state(&ValueStateDescriptor::<Vec<i64>>::new("seen"))?;
                s.set_current_key("a")?;
                // Absent: Keep leaves nothing, Set inserts.
                let had = v.update_in_place(|old| (ValueChange::Keep, old.is_some()))?;
                assert!(!had);
                assert_eq!(v.value()?, None);
                v.update_in_place(|_| (ValueChange::Set(vec![1]), ()))?;
                // Present: changed where it is, kept.
                let len = v.update_in_place(|old| {
                    let list = old.expect("the value set above");
                    list.push(2);
                    (ValueChange::Keep, list.len())
                })?;
                assert_eq!(len, 2);
                assert_eq!(v.value()?, Some(vec![1, 2]));
                v.update_in_place(|_| (ValueChange::Set(vec![9]), ()))?;
                assert_eq!(v.value()?, Some(vec![9]));
                s.set_current_key("b")?;
                v.update_in_place(|_| (ValueChange::Set(vec![7]), ()))?;
                s.set_current_key("a")?;
                v.update_in_place(|_| (ValueChange::<Vec<i64>>::Remove, ()))?;
                assert_eq!(v.value()?, None);
                v.update_in_place(|_| (ValueChange::<Vec<i64>>::Remove, ()))?;
                s.set_current_key("b")?;
                assert_eq!(v.value()?, Some(vec![7]));
                assert_eq!(s.len("seen")?, 1);
                Ok(())
            }

            #[test]
            fn value_state_changes_an_existing_value_in_place() -> Result<(), StateError> {
                let s = store(all_groups());
                let v = s.value_state(&ValueStateDescriptor::<Vec<i64>>::new("seen"))?;
                s.set_current_key("a")?;
                // Absent: not called, nothing stored.
                let mut called = false;
                assert_eq!(v.update_existing(|_| called = true)?, None);
                assert!(!called);
                assert_eq!(v.value()?, None);
                v.update(vec![1])?;
                s.set_current_key("b")?;
                v.update(vec![5])?;
                // Present: changed where it is, and kept changed.
                s.set_current_key("a")?;
                let len = v.update_existing(|list| {
                    list.push(2);
                    list.len()
                })?;
                assert_eq!(len, Some(2));
                assert_eq!(v.value()?, Some(vec![1, 2]));
                s.set_current_key("b")?;
                assert_eq!(v.value()?, Some(vec![5]), "another key's value untouched");
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
                let mut seen = Vec::new();
                l.for_each(|v| seen.push(v.clone()))?;
                assert_eq!(seen, vec!["x", "y", "z"], "visited in place, in order");
                l.update(vec!["only".into()])?;
                assert_eq!(l.get()?, vec!["only"]);
                s.set_current_key(&2u64)?;
                assert!(l.get()?.is_empty());
                Ok(())
            }

            #[test]
            fn list_state_says_a_keys_first_element_and_retains_in_place() -> Result<(), StateError>
            {
                let s = store(all_groups());
                let l = s.list_state(&ListStateDescriptor::<i64>::new("kept"))?;
                s.set_current_key(&1u64)?;
                assert!(l.add_is_first(5)?, "the key had no list");
                assert!(!l.add_is_first(8)?);
                l.add(2)?;
                l.add(9)?;
                l.retain(|v| *v > 4)?;
                assert_eq!(l.get()?, vec![5, 8, 9], "the rest kept, in order");
                s.set_current_key(&2u64)?;
                l.add(1)?;
                s.set_current_key(&1u64)?;
                l.retain(|_| false)?;
                assert!(l.get()?.is_empty());
                assert_eq!(s.len("kept")?, 1, "an emptied list is removed");
                assert!(l.add_is_first(3)?, "first again once emptied");
                Ok(())
            }

            #[test]
            fn list_state_take_returns_the_list_and_removes_it() -> Result<(), StateError> {
                let s = store(all_groups());
                let l = s.list_state(&ListStateDescriptor::<String>::new("taken"))?;
                s.set_current_key(&1u64)?;
                assert!(l.take()?.is_empty(), "no list yet");
                l.add_all(["a".to_string(), "b".to_string()])?;
                s.set_current_key(&2u64)?;
                l.add("c".into())?;
                s.set_current_key(&1u64)?;
                assert_eq!(l.take()?, vec!["a", "b"], "in order");
                assert!(l.get()?.is_empty(), "taken away");
                assert_eq!(s.len("taken")?, 1, "only the other key's list is left");
                s.set_current_key(&2u64)?;
                assert_eq!(l.get()?, vec!["c"], "another key's list untouched");
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
            fn maps_of_keys_stay_apart_through_clear_and_rescaling() -> Result<(), StateError> {
                type Field = (String, u8);
                let desc = || MapStateDescriptor::<Field, u64>::new("fields");
                let field = |i: u64| (format!("f{}", i % 7), (i % 3) as u8);
                let one = store(key_group_range_for_operator(128, 1, 0));
                let m = one.map_state(&desc())?;
                for k in 0..100u64 {
                    one.set_current_key(&k)?;
                    for i in 0..k % 5 {
                        m.put(field(i), k * 100 + i)?;
                    }
                }
                // Clearing one key's map leaves its neighbours' maps.
                one.set_current_key(&4u64)?;
                m.clear()?;
                assert!(m.is_empty()?);
                one.set_current_key(&3u64)?;
                assert_eq!(m.get(&field(2))?, Some(302));
                let halves: Vec<KeyedStateStore> = (0..2)
                    .map(|i| store(key_group_range_for_operator(128, 2, i)))
                    .collect();
                let handles = halves
                    .iter()
                    .map(|h| h.map_state(&desc()))
                    .collect::<Result<Vec<_>, _>>()?;
                for kg in 0..128 {
                    for entry in one.snapshot_key_group($crate::KeyGroup(kg))? {
                        for h in &halves {
                            h.restore(&entry)?;
                        }
                    }
                }
                for k in 0..100u64 {
                    let kg = $crate::assign_to_key_group(&k, 128);
                    let owner = $crate::operator_index_for_key_group(128, 2, kg) as usize;
                    halves[owner].set_current_key(&k)?;
                    let mut entries = handles[owner].entries()?;
                    entries.sort_by_key(|(_, v)| *v);
                    let expected: Vec<(Field, u64)> = if k == 4 {
                        Vec::new()
                    } else {
                        (0..k % 5).map(|i| (field(i), k * 100 + i)).collect()
                    };
                    assert_eq!(entries, expected, "key {k}");
                }
                // Keys with a non-empty map (k % 5 != 0), but not key 4.
                assert_eq!(halves[0].len("fields")? + halves[1].len("fields")?, 79);
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
                    for entry in one.snapshot_key_group($crate::KeyGroup(kg))? {
                        for h in &halves {
                            h.restore(&entry)?;
                        }
                    }
                }
                for k in 0..200u64 {
                    let kg = $crate::assign_to_key_group(&k, 128);
                    let owner = $crate::operator_index_for_key_group(128, 2, kg) as usize;
                    halves[owner].set_current_key(&k)?;
                    assert_eq!(handles[owner].value()?, Some(k * 10), "key {k}");
                }
                assert_eq!(halves[0].len("count")? + halves[1].len("count")?, 200);
                Ok(())
            }

            #[test]
            fn namespaced_state_is_per_key_and_namespace() -> Result<(), StateError> {
                let s = store(all_groups());
                let windows = s.per_namespace();
                let per_window = windows.value_state(&ValueStateDescriptor::<u64>::new("w"))?;
                let entries =
                    windows.map_state(&MapStateDescriptor::<u64, String>::new("elements"))?;
                let global = s.value_state(&ValueStateDescriptor::<u64>::new("g"))?;
                for k in 0..50u64 {
                    s.set_current_key(&k)?;
                    global.update(k)?;
                    for w in 0..3i64 {
                        s.set_current_namespace(&(w * 10, w * 10 + 10))?;
                        per_window.update(k * 100 + w as u64)?;
                        entries.put(w as u64, format!("{k}/{w}"))?;
                        entries.put(99, "x".into())?;
                    }
                }
                // A namespaced handle needs a namespace after the key is set.
                s.set_current_key(&7u64)?;
                assert!(matches!(per_window.value(), Err(StateError::NotKeyed(_))));
                assert_eq!(global.value()?, Some(7), "plain state ignores namespaces");
                s.set_current_namespace(&(10i64, 20i64))?;
                assert_eq!(per_window.value()?, Some(701));
                assert_eq!(global.value()?, Some(7));
                let mut got = entries.entries()?;
                got.sort();
                assert_eq!(got, vec![(1, "7/1".to_string()), (99, "x".to_string())]);

                // Dropping a window clears every namespaced state in it, and
                // only there.
                s.clear_current_namespace()?;
                assert_eq!(per_window.value()?, None);
                assert!(entries.is_empty()?);
                assert_eq!(global.value()?, Some(7));
                s.set_current_namespace(&(20i64, 30i64))?;
                assert_eq!(per_window.value()?, Some(702));
                assert_eq!(entries.get(&2)?, Some("7/2".into()));

                // Namespaced entries move with their key's key group.
                let halves: Vec<KeyedStateStore> = (0..2)
                    .map(|i| store(key_group_range_for_operator(128, 2, i)))
                    .collect();
                let restored = halves
                    .iter()
                    .map(|h| {
                        let n = h.per_namespace();
                        h.value_state(&ValueStateDescriptor::<u64>::new("g"))?;
                        Ok((
                            n.value_state(&ValueStateDescriptor::<u64>::new("w"))?,
                            n.map_state(&MapStateDescriptor::<u64, String>::new("elements"))?,
                        ))
                    })
                    .collect::<Result<Vec<_>, StateError>>()?;
                for kg in 0..128 {
                    for entry in s.snapshot_key_group($crate::KeyGroup(kg))? {
                        for h in &halves {
                            h.restore(&entry)?;
                        }
                    }
                }
                for k in 0..50u64 {
                    let kg = $crate::assign_to_key_group(&k, 128);
                    let owner = $crate::operator_index_for_key_group(128, 2, kg) as usize;
                    halves[owner].set_current_key(&k)?;
                    halves[owner].set_current_namespace(&(0i64, 10i64))?;
                    assert_eq!(restored[owner].0.value()?, Some(k * 100), "key {k}");
                    assert_eq!(restored[owner].1.get(&0)?, Some(format!("{k}/0")));
                }
                Ok(())
            }

            #[test]
            fn a_key_outside_the_range_is_rejected() -> Result<(), StateError> {
                let s = store(KeyGroupRange { start: 0, end: 0 });
                s.value_state(&ValueStateDescriptor::<u64>::new("v"))?;
                let outside = (0..1000u64)
                    .find(|k| $crate::assign_to_key_group(k, 128).0 != 0)
                    .unwrap_or(1);
                assert!(s.set_current_key(&outside).is_err());
                Ok(())
            }
        }
    };
}
