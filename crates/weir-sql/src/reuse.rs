//! Sub-plans a statement writes more than once, planned once (Flink's
//! `table.optimizer.reuse-sub-plan-enabled`, on by default): a window
//! aggregation that two `SELECT`s of a statement compute — the same window
//! TVF, `WHERE` and `GROUP BY`, and the same aggregate calls — runs once,
//! and each `SELECT` list is computed from its rows. Nexmark q5 counts the
//! bids of each window per auction in both sides of its join.

use std::cell::RefCell;
use std::collections::HashMap;

use sqlparser::ast::{Query, Select, SetExpr, TableFactor};
use weir::prelude::DataStream;

use crate::expr::Scope;
use crate::types::SqlType;
use crate::value::Row;

/// A window aggregation planned for the first `SELECT` that computes it.
#[derive(Clone)]
pub(crate) struct SharedWindows {
    /// The columns of the rows it aggregates (the window TVF's).
    pub input: Scope,
    pub proctime: bool,
    /// The type of its `window_time` column.
    pub time_type: SqlType,
    /// Its aggregate calls, described (a `SELECT` with other calls does
    /// not share it).
    pub calls: String,
    /// Its result rows: every output column (keys, `window_start`,
    /// `window_end`, `window_time`, the aggregates).
    pub stream: DataStream<Row>,
    /// The `EXPLAIN` steps up to and with the aggregation.
    pub steps: Vec<String>,
}

thread_local! {
    /// The window aggregations of the statement being planned that it
    /// writes more than once, by their text, each with its plan once made.
    static SHARED: RefCell<HashMap<String, Option<SharedWindows>>> =
        RefCell::new(HashMap::new());
}

/// Finds the window aggregations `query` writes more than once (forgetting
/// those of the statement before).
pub(crate) fn find_shared(query: &Query) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    visit_query(query, &mut seen);
    SHARED.with_borrow_mut(|shared| {
        shared.clear();
        shared.extend(
            seen.into_iter()
                .filter(|(_, n)| *n > 1)
                .map(|(text, _)| (text, None)),
        );
    });
}

fn visit_query(query: &Query, seen: &mut HashMap<String, usize>) {
    visit_set(&query.body, seen);
}

fn visit_set(set: &SetExpr, seen: &mut HashMap<String, usize>) {
    match set {
        SetExpr::Select(select) => {
            if let Some(text) = text_of(select) {
                *seen.entry(text).or_default() += 1;
            }
            for from in &select.from {
                let joined = from.joins.iter().map(|j| &j.relation);
                for relation in std::iter::once(&from.relation).chain(joined) {
                    if let TableFactor::Derived { subquery, .. } = relation {
                        visit_query(subquery, seen);
                    }
                }
            }
        }
        SetExpr::Query(query) => visit_query(query, seen),
        SetExpr::SetOperation { left, right, .. } => {
            visit_set(left, seen);
            visit_set(right, seen);
        }
        _ => {}
    }
}

/// What identifies a window aggregation in a statement: its window TVF,
/// `WHERE` and `GROUP BY`, as written.
pub(crate) fn text_of(select: &Select) -> Option<String> {
    match select.from.as_slice() {
        [from] if from.joins.is_empty() => match &from.relation {
            TableFactor::TableFunction { .. } => Some(format!(
                "FROM {from} WHERE {} {}",
                select
                    .selection
                    .as_ref()
                    .map_or(String::new(), ToString::to_string),
                select.group_by
            )),
            _ => None,
        },
        _ => None,
    }
}

/// The text of `select`'s window aggregation, if the statement writes it
/// more than once.
pub(crate) fn shared_text(select: &Select) -> Option<String> {
    let text = text_of(select)?;
    SHARED
        .with_borrow(|shared| shared.contains_key(&text))
        .then_some(text)
}

/// The plan of the shared window aggregation `text`, once made.
pub(crate) fn planned(text: &str) -> Option<SharedWindows> {
    SHARED.with_borrow(|shared| shared.get(text).cloned().flatten())
}

/// Keeps `windows` as the plan of the shared window aggregation `text`
/// (the first plan made stays).
pub(crate) fn keep(text: &str, windows: SharedWindows) {
    SHARED.with_borrow_mut(|shared| {
        if let Some(slot @ None) = shared.get_mut(text) {
            *slot = Some(windows);
        }
    });
}

/// Stops sharing the window aggregation `text`: a plan that computes what
/// its second writing was read for another way plans it once.
pub(crate) fn forget(text: &str) {
    SHARED.with_borrow_mut(|shared| {
        shared.remove(text);
    });
}
