//! `weir-bench sql`: the Nexmark queries in SQL (`examples/sql/nexmark/`)
//! against the same queries written as DataStream jobs (`weir-nexmark`),
//! over the same events (replayed from a pre-generated pool, so that the
//! generator is not what is measured), each into a discarding sink, each
//! run in its own process (for its peak RSS).
//!
//! `--chain-keyed-exchanges true|false|auto` runs both with
//! `pipeline.operator-chaining.chain-keyed-exchanges` set so: `false`, a
//! task on each side of every keyed exchange, as Flink runs them; `true`,
//! one chain; `auto` (the default, as for any job), chained unless the
//! job would leave cores idle behind its sources.

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use weir::prelude::*;
use weir_nexmark::{queries, Event, EventPool, GeneratorConfig, NexmarkGenerator};

/// The queries with a SQL version, and the blackhole table each writes to.
const QUERIES: &[(&str, &str)] = &[
    (
        "q0",
        "auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra STRING",
    ),
    (
        "q1",
        "auction BIGINT, bidder BIGINT, price DECIMAL(22, 3), dateTime TIMESTAMP(3), extra STRING",
    ),
    ("q2", "auction BIGINT, price BIGINT"),
    ("q3", "name STRING, city STRING, state STRING, id BIGINT"),
    ("q4", "category BIGINT, average BIGINT"),
    ("q5", "auction BIGINT, num BIGINT"),
    (
        "q7",
        "auction BIGINT, price BIGINT, bidder BIGINT, dateTime TIMESTAMP(3), extra STRING",
    ),
    ("q8", "id BIGINT, name STRING, starttime TIMESTAMP(3)"),
    (
        "q11",
        "bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)",
    ),
    (
        "q12",
        "bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)",
    ),
    (
        "q14",
        "auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType STRING, \
         dateTime TIMESTAMP(3), extra STRING, c_counts BIGINT",
    ),
    (
        "q15",
        "`day` STRING, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, \
         rank3_bids BIGINT, total_bidders BIGINT, rank1_bidders BIGINT, rank2_bidders BIGINT, \
         rank3_bidders BIGINT, total_auctions BIGINT, rank1_auctions BIGINT, \
         rank2_auctions BIGINT, rank3_auctions BIGINT",
    ),
    (
        "q16",
        "channel STRING, `day` STRING, `minute` STRING, total_bids BIGINT, rank1_bids BIGINT, \
         rank2_bids BIGINT, rank3_bids BIGINT, total_bidders BIGINT, rank1_bidders BIGINT, \
         rank2_bidders BIGINT, rank3_bidders BIGINT, total_auctions BIGINT, \
         rank1_auctions BIGINT, rank2_auctions BIGINT, rank3_auctions BIGINT",
    ),
];

const POOL: u64 = 100_000;

pub fn main(params: &ParameterTool, events: u64) -> anyhow::Result<()> {
    let pool: u64 = params.get_parsed("pool")?.unwrap_or(POOL);
    if let Some(dir) = params.get("write-pool") {
        return write_pool(std::path::Path::new(dir), pool);
    }
    if let Some(query) = params.get("script") {
        print!("{}", blackhole_script(query, events, pool)?);
        return Ok(());
    }
    let chain_keyed = params.get("chain-keyed-exchanges").unwrap_or("auto");
    if !matches!(chain_keyed, "true" | "false" | "auto") {
        bail!("--chain-keyed-exchanges is true, false or auto, not {chain_keyed}");
    }
    if let Some(kind) = params.get("run") {
        let query = params.required("query")?;
        return run_one(kind, query, events, pool, chain_keyed);
    }
    let wanted: Vec<&str> = match params.get("query") {
        Some(list) => list.split(',').collect(),
        None => QUERIES.iter().map(|(q, _)| *q).collect(),
    };
    println!(
        "events: {events}, pool: {pool} events, parallelism 1, discarding sinks, \
         keyed exchanges chained: {chain_keyed}"
    );
    println!(
        "{:<5} {:>16} {:>14} {:>8} {:>18} {:>16} {:>12} {:>10}",
        "query",
        "DataStream ev/s",
        "SQL ev/s",
        "SQL/DS",
        "DataStream ev/CPU-s",
        "SQL ev/CPU-s",
        "DS RSS MiB",
        "SQL RSS MiB"
    );
    let exe = std::env::current_exe().context("locating the bench binary")?;
    for q in wanted {
        let run = |kind: &str| -> anyhow::Result<Vec<f64>> {
            let out = Command::new(&exe)
                .args(["sql", "--run", kind, "--query", q])
                .args(["--events", &events.to_string(), "--pool", &pool.to_string()])
                .args(["--chain-keyed-exchanges", chain_keyed])
                .output()
                .with_context(|| format!("running {kind} {q}"))?;
            if !out.status.success() {
                bail!(
                    "{kind} {q} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect())
        };
        let ds = run("datastream")?;
        let sql = run("sql")?;
        let f = |v: &[f64], i: usize| v.get(i).copied().unwrap_or(0.0);
        println!(
            "{:<5} {:>16.0} {:>14.0} {:>7.0}% {:>18.0} {:>16.0} {:>12.1} {:>10.1}",
            q,
            f(&ds, 0),
            f(&sql, 0),
            100.0 * f(&sql, 0) / f(&ds, 0).max(1.0),
            f(&ds, 1),
            f(&sql, 1),
            f(&ds, 2) / 1024.0,
            f(&sql, 2) / 1024.0
        );
    }
    Ok(())
}

/// Runs one query one way and prints `events/s events-per-CPU-s rss-KiB`.
fn run_one(
    kind: &str,
    query: &str,
    events: u64,
    pool_size: u64,
    chain_keyed: &str,
) -> anyhow::Result<()> {
    const CHAIN_KEYED: &str = weir::config::keys::CHAIN_KEYED_EXCHANGES;
    let cpu0 = crate::cpu_seconds();
    let start = Instant::now();
    match kind {
        "datastream" => {
            let generator = NexmarkGenerator::new(GeneratorConfig::default());
            let pool = Arc::new(EventPool::new(&generator, pool_size));
            let env = StreamExecutionEnvironment::new();
            let mut config = Configuration::new();
            config.set(CHAIN_KEYED, chain_keyed);
            env.configure(&config)?;
            let stream = queries::events_from(&env, move |n| pool.event(n), events, 1);
            match query {
                "q0" => queries::q0(&stream).add_sink(DiscardingSink),
                "q1" => queries::q1(&stream).add_sink(DiscardingSink),
                "q2" => queries::q2(&stream).add_sink(DiscardingSink),
                "q3" => queries::q3(&stream).add_sink(DiscardingSink),
                "q4" => queries::q4(&stream).add_sink(DiscardingSink),
                "q5" => queries::q5(&stream).add_sink(DiscardingSink),
                "q7" => queries::q7(&stream).add_sink(DiscardingSink),
                "q8" => queries::q8(&stream).add_sink(DiscardingSink),
                "q11" => queries::q11(&stream).add_sink(DiscardingSink),
                "q12" => queries::q12(&stream).add_sink(DiscardingSink),
                "q14" => queries::q14(&stream).add_sink(DiscardingSink),
                "q15" => queries::q15(&stream).add_sink(DiscardingSink),
                "q16" => queries::q16(&stream).add_sink(DiscardingSink),
                other => bail!("no DataStream query {other} here"),
            };
            env.execute(query)?;
        }
        "sql" => {
            let script = blackhole_script(query, events, pool_size)?;
            let mut session = weir_sql::Session::with_output(Box::new(std::io::sink()));
            session.set(CHAIN_KEYED, chain_keyed);
            session.execute_script(&script)?;
        }
        other => bail!("--run datastream or sql, not {other}"),
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = (crate::cpu_seconds() - cpu0).max(1e-9);
    println!(
        "{:.0} {:.0} {}",
        events as f64 / secs,
        events as f64 / cpu,
        crate::peak_rss_kib()
    );
    Ok(())
}

/// The SQL file of `query` (`examples/sql/nexmark/`) reading `events`
/// events replayed from a pool of `pool_size`, its `SELECT` written into a
/// blackhole table.
fn blackhole_script(query: &str, events: u64, pool_size: u64) -> anyhow::Result<String> {
    let Some((_, sink)) = QUERIES.iter().find(|(q, _)| *q == query) else {
        let known: Vec<&str> = QUERIES.iter().map(|(q, _)| *q).collect();
        bail!("no SQL query {query} (known: {})", known.join(", "));
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/sql/nexmark")
        .join(format!("{query}.sql"));
    let script = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {}", path.display()))?
        .replace(
            "'events.num' = '100000'",
            &format!("'events.num' = '{events}', 'pool.size' = '{pool_size}'"),
        );
    let select = script
        .rfind("\nSELECT")
        .context("the query file ends with its SELECT")?;
    Ok(format!(
        "{}\nCREATE TABLE sink ({sink}) WITH ('connector' = 'blackhole');\nINSERT INTO sink{}",
        &script[..select],
        &script[select..]
    ))
}

/// Writes the pool of `size` events as tab-separated files, one per kind
/// (`person.tsv`, `auction.tsv`, `bid.tsv`: the fields in the SQL tables'
/// order, times in ms since the epoch), and `pool.txt` (`people auctions
/// milliseconds`, what each pass of the replay adds), so that another
/// engine replays the very stream the `nexmark` tables read.
fn write_pool(dir: &std::path::Path, size: u64) -> anyhow::Result<()> {
    use std::io::Write;
    let generator = NexmarkGenerator::new(GeneratorConfig::default());
    let pool = EventPool::new(&generator, size);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let open = |name: &str| -> anyhow::Result<std::io::BufWriter<std::fs::File>> {
        let path = dir.join(name);
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(std::io::BufWriter::new(file))
    };
    let (mut people, mut auctions, mut bids) =
        (open("person.tsv")?, open("auction.tsv")?, open("bid.tsv")?);
    // The files have no quoting: a text field must not hold a tab or a
    // line break.
    let text = |t: &weir_nexmark::Text| -> anyhow::Result<String> {
        if t.contains(['\t', '\n', '\r']) {
            bail!("a generated text holds a tab or a line break: {t:?}");
        }
        Ok(t.to_string())
    };
    for event in pool.events() {
        match event {
            Event::Person(p) => writeln!(
                people,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                p.id,
                text(&p.name)?,
                text(&p.email_address)?,
                text(&p.credit_card)?,
                text(&p.city)?,
                text(&p.state)?,
                p.date_time,
                text(&p.extra)?
            )?,
            Event::Auction(a) => writeln!(
                auctions,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                a.id,
                text(&a.item_name)?,
                text(&a.description)?,
                a.initial_bid,
                a.reserve,
                a.date_time,
                a.expires,
                a.seller,
                a.category,
                text(&a.extra)?
            )?,
            Event::Bid(b) => writeln!(
                bids,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                b.auction,
                b.bidder,
                b.price,
                text(&b.channel)?,
                text(&b.url)?,
                b.date_time,
                text(&b.extra)?
            )?,
        }
    }
    for mut file in [people, auctions, bids] {
        file.flush()?;
    }
    let (people, auctions, ms) = pool.pass_step();
    std::fs::write(dir.join("pool.txt"), format!("{people} {auctions} {ms}\n"))
        .with_context(|| format!("writing {}", dir.join("pool.txt").display()))?;
    eprintln!(
        "wrote a pool of {} events to {}",
        pool.events().len(),
        dir.display()
    );
    Ok(())
}
