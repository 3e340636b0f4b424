//! "Why is there no output?" on a running job: one split of a source
//! stops, the windows downstream wait, and the job's diagnosis follows the
//! lowest watermark from the window through an exchange to that split.

use std::time::Duration;

use serde_json::Value;
use weir::prelude::*;

use crate::rest::{call, wait_until, Browser};

/// Four splits over two subtasks, named `orders-0` … `orders-3`, one
/// record per split and poll, event time 100 ms further each poll; with
/// `stall`, `orders-3` stops at 5 s.
#[derive(Clone)]
struct Orders {
    subtask: usize,
    step: i64,
    stall: bool,
}

impl SplitSourceFunction<(String, i64)> for Orders {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index as usize;
        Ok(())
    }

    fn poll_next(
        &mut self,
        ctx: &mut SplitContext<'_, (String, i64)>,
    ) -> FunctionResult<SourceStatus> {
        ctx.declare_splits(2);
        for split in 0..2 {
            let name = format!("orders-{}", 2 * self.subtask + split);
            if self.step == 0 {
                ctx.name_split(split, name.clone());
            }
            let ts = self.step * 100;
            if self.stall && name == "orders-3" && ts > 5_000 {
                continue;
            }
            ctx.collect_with_timestamp(split, (name, 1), ts);
        }
        self.step += 1;
        std::thread::sleep(Duration::from_millis(2));
        Ok(SourceStatus::More)
    }
}

/// The job: orders by split name into 10 s tumbling windows, through a
/// rebalance and a map; its diagnosis URL.
fn orders_job(stall: bool) -> (weir_runtime::cluster::JobClient, String) {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0");
    env.configure(&c).expect("configuration");
    env.set_parallelism(2);
    env.from_split_source(
        Orders {
            subtask: 0,
            step: 0,
            stall,
        },
        WatermarkStrategy::for_monotonous_timestamps(),
        "orders",
    )
    .rebalance()
    .map(|o: (String, i64)| o)
    .key_by(|o: &(String, i64)| o.0.clone())
    .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
    .reduce(|a: (String, i64), b: (String, i64)| (a.0, a.1 + b.1))
    .add_sink(DiscardingSink);
    let job = env.execute_async("orders").expect("the job starts");
    let url = format!(
        "http://127.0.0.1:{}/jobs/{}/diagnosis",
        job.rest_address().expect("served").port(),
        job.job_id()
    );
    (job, url)
}

#[test]
fn a_healthy_job_has_nothing_to_diagnose() {
    let (job, url) = orders_job(false);
    let view = job.view();
    // Windows fire as the watermark moves on; the next ones always wait
    // for it, which is no finding.
    wait_until("windows to fire", || {
        view.vertices()
            .iter()
            .any(|v| v.name.starts_with("Window") && v.records_out > 0)
    });
    // Asked after longer than a watermark must stand still to count as
    // stalled (a stuck one would show by then); asked again while a
    // loaded machine holds one back for a moment.
    let fired = std::time::Instant::now();
    let mut diagnosis = serde_json::Value::Null;
    wait_until("a diagnosis without findings", || {
        diagnosis = call("GET", &url, None, None).1;
        fired.elapsed() > std::time::Duration::from_millis(1_500)
            && diagnosis["findings"] == serde_json::json!([])
    });
    assert!(
        diagnosis["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("No event-time operator is waiting")),
        "{diagnosis:#}"
    );
    job.cancel();
}

#[test]
fn a_stalled_split_is_named_as_what_holds_the_windows_back() {
    let (job, url) = orders_job(true);
    let mut diagnosis = Value::Null;
    // The stall counts once the split has had no records for a second.
    wait_until("the diagnosis to suggest idleness", || {
        diagnosis = call("GET", &url, None, None).1;
        diagnosis["text"]
            .as_str()
            .is_some_and(|t| t.contains("with_idleness"))
    });
    let findings = diagnosis["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{diagnosis:#}");
    for f in findings {
        let text = f["text"].as_str().expect("text");
        assert!(
            f["vertex-name"]
                .as_str()
                .is_some_and(|n| n.starts_with("Window")),
            "{f:#}"
        );
        // Window ← Map (its lowest channel) ← the source's second subtask,
        // whose lowest split is the one that stopped at 5 s.
        assert!(text.contains("its input from 'Map' subtask"), "{text}");
        assert!(
            text.contains("its input from 'Source: orders' subtask 2"),
            "{text}"
        );
        assert!(
            text.contains("source 'Source: orders' subtask 2 reads orders-3"),
            "{text}"
        );
        assert!(text.contains("whose watermark is 00:00:04.999"), "{text}");
        assert!(
            text.contains("waits for watermark ≥ 00:00:09.999"),
            "{text}"
        );
        assert_eq!(f["culprit"]["split"], "orders-3", "{f:#}");
        assert_eq!(f["culprit"]["subtask"], 1, "{f:#}");
    }
    // The provenance it was read from: the source's splits, by name.
    let vertices = diagnosis["vertices"].as_array().expect("vertices");
    let source = &vertices[0]["subtasks"][1]["source"];
    let splits: Vec<&str> = source["splits"]
        .as_array()
        .expect("splits")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(splits, ["orders-2", "orders-3"], "{source:#}");
    // The dashboard shows the same answer, and each subtask's splits.
    let browser = Browser::start();
    browser.go(&url.replace(&format!("/jobs/{}/diagnosis", job.job_id()), "/"));
    wait_until("the diagnosis on the dashboard", || {
        browser.text("#diagnosis").contains("reads orders-3")
    });
    wait_until("the stalled split in the watermark table", || {
        browser
            .text("#watermark-table")
            .contains("orders-3: 1970-01-01 00:00:04.999")
    });
    job.cancel();
}
