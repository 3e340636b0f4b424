//! "Why is there no output?": for every event-time operator subtask with
//! pending timers that its watermark has not reached, the input holding
//! the watermark back, followed upstream channel by channel down to the
//! source subtask and the split whose watermark is lowest, with how long
//! each has not advanced; idle inputs; records dropped as late. Read from
//! the watermark provenance the tasks publish (see `crate::provenance`).

use std::fmt::Write as _;

use crate::provenance::{wall_clock_ms, ChannelState, SourceState, SplitState};

use super::view::JobView;

/// Where one subtask's watermark comes from, as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtaskProvenance {
    /// Its input watermark (`None` before the first).
    pub input_watermark: Option<i64>,
    /// When it last advanced (wall clock, ms).
    pub watermark_advanced_ms: Option<i64>,
    /// For the subtask of a vertex that heads a task: each input's
    /// channels (empty for a source).
    pub inputs: Vec<Vec<ChannelState>>,
    /// For a source subtask: what it emitted, and its splits.
    pub source: Option<SourceState>,
    /// For an operator with event-time timers: how many are pending, and
    /// the earliest's time.
    pub timers: Option<(u64, Option<i64>)>,
}

/// One vertex's subtasks' provenance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VertexProvenance {
    /// The vertex heading the task this vertex runs in (itself, unless it
    /// is chained behind another).
    pub task_head: usize,
    /// By subtask.
    pub subtasks: Vec<SubtaskProvenance>,
    /// Records dropped as late, over all subtasks.
    pub late_records_dropped: u64,
}

/// One finding: a subtask that waits for its watermark, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The waiting vertex.
    pub vertex: usize,
    /// Its subtask.
    pub subtask: u32,
    /// The explanation, in plain language.
    pub text: String,
    /// Where the chain of lowest inputs ends: the source vertex, subtask
    /// and split (if a split source), when it was followed that far.
    pub culprit: Option<(usize, u32, Option<String>)>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    /// Subtasks waiting for a watermark, each with its explanation.
    pub findings: Vec<Finding>,
    /// Other observations (late records dropped, idle inputs, operators
    /// without records).
    pub notes: Vec<String>,
}

impl Diagnosis {
    /// Everything as lines of text.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        if self.findings.is_empty() {
            text.push_str("No event-time operator is waiting for its watermark.\n");
        }
        for f in &self.findings {
            let _ = writeln!(text, "{}", f.text);
        }
        for n in &self.notes {
            let _ = writeln!(text, "{n}");
        }
        text
    }
}

/// Each vertex's provenance, now.
pub fn provenance(job: &JobView) -> Vec<VertexProvenance> {
    let edges = job.edges();
    let metrics = job.operator_metrics();
    let heads: Vec<usize> = (0..metrics.len())
        .map(|v| {
            let mut v = v;
            // A chained vertex has one input and publishes no probes.
            for _ in 0..metrics.len() {
                if !metrics[v].probes().is_empty() {
                    break;
                }
                match edges.iter().find(|e| e.to == v) {
                    Some(e) => v = e.from,
                    None => break,
                }
            }
            v
        })
        .collect();
    metrics
        .iter()
        .enumerate()
        .map(|(v, m)| {
            let probes = m.probes();
            let watermarks = m.subtask_watermarks();
            let advanced = m.subtask_watermark_advanced();
            let timers = m.subtask_timers();
            let count = probes.len().max(watermarks.len()).max(timers.len());
            let subtasks = (0..count)
                .map(|s| {
                    let probe = probes.get(s);
                    let inputs = probe.map(|p| p.inputs()).unwrap_or_default();
                    SubtaskProvenance {
                        input_watermark: watermarks.get(s).copied().flatten(),
                        watermark_advanced_ms: advanced.get(s).copied().flatten(),
                        source: probe.filter(|_| inputs.is_empty()).map(|p| p.source()),
                        inputs,
                        timers: timers.get(s).copied().flatten(),
                    }
                })
                .collect();
            VertexProvenance {
                task_head: heads[v],
                subtasks,
                late_records_dropped: m.late_records_dropped(),
            }
        })
        .collect()
}

/// Why the job's event-time operators wait, as of now.
pub fn diagnose(job: &JobView) -> Diagnosis {
    let now = wall_clock_ms();
    let vertices = job.vertices();
    let provenance = provenance(job);
    let name = |v: usize| vertices.get(v).map_or("?", |x| x.name.as_str()).to_string();
    let parallelism = |v: usize| vertices.get(v).map_or(0, |x| x.parallelism);
    let mut findings = Vec::new();
    let mut notes = Vec::new();
    for (v, p) in provenance.iter().enumerate() {
        for (s, sub) in p.subtasks.iter().enumerate() {
            let Some((count, Some(earliest))) = sub.timers else {
                continue;
            };
            let watermark = sub.input_watermark.unwrap_or(i64::MIN);
            if count == 0 || watermark >= earliest {
                continue;
            }
            // Windows always wait for the next watermark; one that has not
            // come for a while is what keeps output back.
            let still = match sub.watermark_advanced_ms {
                Some(at) => now - at,
                None => job.duration().as_millis() as i64,
            };
            if still < STALLED_MS {
                continue;
            }
            let mut text = format!(
                "'{}' ({}/{}) waits for watermark ≥ {} to fire the earliest of {count} pending \
                 event-time timer{} (windows to fire); its watermark is {} and has not \
                 advanced for {}",
                name(v),
                s + 1,
                parallelism(v),
                event_time(earliest),
                if count == 1 { "" } else { "s" },
                watermark_text(watermark),
                duration_text(still),
            );
            let culprit = explain(&provenance, &name, p.task_head, s as u32, now, &mut text);
            findings.push(Finding {
                vertex: v,
                subtask: s as u32,
                text,
                culprit,
            });
        }
        if p.late_records_dropped > 0 {
            notes.push(format!(
                "'{}' dropped {} record{} as late (behind its watermark plus the allowed \
                 lateness); a late-data side output keeps them",
                name(v),
                p.late_records_dropped,
                if p.late_records_dropped == 1 { "" } else { "s" }
            ));
        }
    }
    for (v, x) in vertices.iter().enumerate() {
        let has_timers = provenance
            .get(v)
            .is_some_and(|p| p.subtasks.iter().any(|s| s.timers.is_some()));
        if has_timers && x.records_in == 0 {
            notes.push(format!(
                "'{}' has received no records yet: nothing is pending",
                x.name
            ));
        }
    }
    Diagnosis { findings, notes }
}

/// Follows the lowest input of `vertex`'s task at `subtask` upstream,
/// appending each step to `text`; returns the source subtask (and split)
/// it ends at.
fn explain(
    provenance: &[VertexProvenance],
    name: &dyn Fn(usize) -> String,
    vertex: usize,
    subtask: u32,
    now: i64,
    text: &mut String,
) -> Option<(usize, u32, Option<String>)> {
    let (mut vertex, mut subtask) = (vertex, subtask);
    // A graph has no cycles; the bound only guards against a bad probe.
    for _ in 0..provenance.len() + 1 {
        let head = provenance.get(vertex)?.task_head;
        let sub = provenance.get(head)?.subtasks.get(subtask as usize)?;
        if let Some(source) = &sub.source {
            let _ = write!(text, "; source '{}' subtask {}", name(head), subtask + 1);
            let split = explain_source(source, now, text);
            return Some((head, subtask, split));
        }
        let channels: Vec<&ChannelState> = sub.inputs.iter().flatten().collect();
        let idle = channels.iter().filter(|c| c.idle && !c.ended).count();
        let lowest = channels
            .iter()
            .filter(|c| !c.idle && !c.ended)
            .min_by_key(|c| c.watermark)?;
        let _ = write!(
            text,
            "; its input from '{}' subtask {} is {} and has not advanced for {}",
            name(lowest.upstream_vertex),
            lowest.upstream_subtask + 1,
            if lowest.watermark == i64::MIN {
                "without a watermark".to_string()
            } else {
                format!("at {}", event_time(lowest.watermark))
            },
            duration_text(now - lowest.advanced_ms),
        );
        if idle > 0 {
            let _ = write!(
                text,
                " ({idle} other input channel{} idle)",
                if idle == 1 { " is" } else { "s are" }
            );
        }
        vertex = lowest.upstream_vertex;
        subtask = lowest.upstream_subtask;
    }
    None
}

/// Appends what holds a source subtask's watermark back; returns the
/// split's name for a split source.
fn explain_source(source: &SourceState, now: i64, text: &mut String) -> Option<String> {
    let silent = |last: Option<i64>| match last {
        Some(t) => format!("has had no records for {}", duration_text((now - t).max(0))),
        None => "has had no records at all".to_string(),
    };
    let lowest: Option<&SplitState> = source
        .splits
        .iter()
        .filter(|s| !s.finished && !s.idle)
        .min_by_key(|s| s.watermark);
    match lowest {
        Some(split) => {
            let _ = write!(
                text,
                " reads {}, whose watermark is {} and which {}",
                split.name,
                watermark_text(split.watermark),
                silent(split.last_record_ms),
            );
            if stalled(split.last_record_ms, now) {
                text.push_str(" — consider `with_idleness` on the watermark strategy");
            }
            Some(split.name.clone())
        }
        None => {
            let _ = write!(text, " {}", silent(source.last_record_ms));
            if stalled(source.last_record_ms, now) {
                text.push_str(" — consider `with_idleness` on the watermark strategy");
            }
            None
        }
    }
}

/// How long a watermark or an input must stand still to count as stalled
/// rather than between two advances (five default watermark intervals).
const STALLED_MS: i64 = 1_000;

/// Whether an input without records for this long looks stalled rather
/// than between two records.
fn stalled(last_record_ms: Option<i64>, now: i64) -> bool {
    last_record_ms.is_none_or(|t| now - t >= STALLED_MS)
}

fn watermark_text(watermark: i64) -> String {
    if watermark == i64::MIN {
        "none yet".to_string()
    } else {
        event_time(watermark)
    }
}

/// An event time (ms since the epoch) as UTC `HH:MM:SS.mmm`, with the
/// date unless it is 1970-01-01 (small test timestamps), and the raw
/// milliseconds Flink's UI shows.
pub fn event_time(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let clock = format!("{h:02}:{m:02}:{s:02}.{milli:03}");
    if days == 0 {
        return format!("{clock} ({ms})");
    }
    let (y, mo, d) = civil_from_days(days);
    format!("{y:04}-{mo:02}-{d:02} {clock} ({ms})")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A wall-clock span in the largest sensible unit.
fn duration_text(ms: i64) -> String {
    match ms.max(0) {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 120_000 => format!("{} s", ms / 1000),
        ms if ms < 7_200_000 => format!("{} min", ms / 60_000),
        ms => format!("{} h", ms / 3_600_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_times_read_as_utc() {
        assert_eq!(event_time(10_000), "00:00:10.000 (10000)");
        assert_eq!(
            event_time(1_764_583_210_123),
            "2025-12-01 10:00:10.123 (1764583210123)"
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(duration_text(250), "250 ms");
        assert_eq!(duration_text(61_000), "61 s");
        assert_eq!(duration_text(300_000), "5 min");
        assert_eq!(duration_text(-5), "0 ms");
    }
}
