#!/usr/bin/env bash
# The Nexmark SQL queries (examples/sql/nexmark/) on Flink 2.3 and on Weir,
# over the same events: Weir's `nexmark` tables replay a pool of 100 000
# generated events; Flink replays the same pool, written out by
# `weir-bench sql --write-pool`, through NexmarkPeer.java. Each query's
# SELECT goes into a `blackhole` table (`weir-bench sql --script qN`, the
# script `weir-bench sql` itself runs), parallelism 1, each engine in a
# process of its own.
#
# Before measuring, one script of window aggregations over every column
# of the three tables runs on both engines, and their rows must be
# identical: the engines read the same events.
#
# Printed per query: events per second, events per CPU second and peak RSS
# of each engine, and Weir's multiple of Flink's; then Weir's rate and
# multiple with `pipeline.operator-chaining.chain-keyed-exchanges` true
# ("chained": every keyed exchange at parallelism 1 chained into one
# thread, the least CPU per event; Weir's default splits a job that
# would leave a core idle, as Flink splits every keyed exchange). Flink's
# rate is over its job's own run time (Flink's net runtime: planning and
# JVM start excluded), its CPU seconds the JVM's from submission to end
# (JIT and garbage collection included); Weir's are its whole process's.
#
# Needs Java 17 and Flink's jars (pip install --no-deps
# apache-flink-libraries==2.3.0).
# Each engine's rate moves between runs (on a shared machine, Weir's by
# up to half, Flink's by a tenth): with RUNS above 1 each query runs that
# many times, the engines alternating, and a last line per query gives the
# median and the lowest of its runs' multiples.
#
# Usage: crates/weir-bench/flink/nexmark_sql.sh [EVENTS [QUERY ...]]
#        (default 4000000 events; q0 q1 q2 q3 q4 q5 q7 q8 q11 q12 q14 q15 q16)
# Env:   FLINK_HEAP (the JVM's largest heap, default 4g)
#        RUNS (runs of each query, default 1)
#        PGO=1 (measure Weir's profile-guided build, target/pgo/release/,
#        made by scripts/pgo-build.sh if it is not there yet; run that
#        again after changing the code)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
events="${1:-4000000}"
[[ "$events" =~ ^[1-9][0-9]*$ ]] || {
  echo "EVENTS must be a positive number, not '$events' (--help for usage)" >&2
  exit 2
}
shift || true
runs="${RUNS:-1}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || {
  echo "RUNS must be a positive number, not '$runs' (--help for usage)" >&2
  exit 2
}
queries=("$@")
[[ ${#queries[@]} -gt 0 ]] || queries=(q0 q1 q2 q3 q4 q5 q7 q8 q11 q12 q14 q15 q16)
pool_size=100000
source "$root/scripts/flink-env.sh"
cp="$(flink_classpath flink-dist flink-table flink-cep)"
build="$root/target/flink-nexmark-peer"
mkdir -p "$build"
javac -nowarn --release 17 -cp "$cp" -d "$build" "$root/crates/weir-sql/flink/SqlPeer.java" \
  "$here/NexmarkPeer.java"
if [[ "${PGO:-0}" == 1 ]]; then
  bin="$root/target/pgo/release"
  [[ -x "$bin/weir-bench" && -x "$bin/weir" ]] || "$root/scripts/pgo-build.sh" >&2
  weir_build="profile-guided build"
else
  cargo build -q --release -p weir-bench -p weir-cli --manifest-path "$root/Cargo.toml"
  bin="$root/target/release"
  weir_build="release build"
fi
bench="$bin/weir-bench"
weir="$bin/weir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Each query's script first: an unknown query fails before anything runs.
for q in "${queries[@]}"; do
  "$bench" sql --script "$q" --events "$events" --pool "$pool_size" >"$work/$q.sql"
done
"$bench" sql --write-pool "$work/pool" --pool "$pool_size" 2>/dev/null
jvm=(-Xmx"${FLINK_HEAP:-4g}" "${FLINK_JVM[@]}")

flink() {
  java "${jvm[@]}" -cp "$build:$cp" weirpeer.NexmarkPeer "$work/pool" "$1" 2>"$work/flink.err" || {
    grep -m5 -E "Exception|Error|Caused" "$work/flink.err" >&2
    return 1
  }
}

# The same events: every field of every table, summed per 10 s window.
table() {
  local name="$1" columns="$2"
  cat <<EOF
CREATE TABLE $name ($columns,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'table' = '$name', 'events.num' = '250000', 'pool.size' = '$pool_size');
EOF
}
{
  table bid "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP(3), extra STRING"
  table auction "id BIGINT, itemName STRING, description STRING, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra STRING"
  table person "id BIGINT, name STRING, emailAddress STRING, creditCard STRING, city STRING,
  state STRING, dateTime TIMESTAMP(3), extra STRING"
  cat <<'EOF'
SELECT window_start, COUNT(*), SUM(auction), SUM(bidder), SUM(price), MAX(dateTime),
  SUM(CHAR_LENGTH(channel) + CHAR_LENGTH(url) + CHAR_LENGTH(extra))
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
SELECT window_start, COUNT(*), SUM(id), SUM(initialBid), SUM(reserve), MAX(expires), SUM(seller),
  SUM(category), SUM(CHAR_LENGTH(itemName) + CHAR_LENGTH(description) + CHAR_LENGTH(extra))
FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
SELECT window_start, COUNT(*), SUM(id), MAX(dateTime), SUM(CHAR_LENGTH(name) +
  CHAR_LENGTH(emailAddress) + CHAR_LENGTH(creditCard) + CHAR_LENGTH(city) + CHAR_LENGTH(state) +
  CHAR_LENGTH(extra))
FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
EOF
} >"$work/check.sql"
flink "$work/check.sql" | sort >"$work/check.flink"
# Weir's tableau rows as the peer's `+I[a, b]` lines.
"$weir" sql -f "$work/check.sql" | grep '^| +I' |
  sed -E 's/^\| \+I \| *//; s/ *\|$//; s/ *\| */, /g; s/^/+I[/; s/$/]/' | sort >"$work/check.weir"
if [[ ! -s "$work/check.flink" ]] || ! diff "$work/check.flink" "$work/check.weir" >&2; then
  echo "Flink and Weir did not read the same Nexmark events (rows above)" >&2
  exit 1
fi
echo "same events on both engines: $(wc -l <"$work/check.flink") window rows identical"

echo "events: $events, pool: $pool_size events, parallelism 1, blackhole sinks, Weir's $weir_build"
printf '%-5s %3s %14s %16s %10s %14s %16s %10s %8s %8s %14s %8s\n' query run "Flink ev/s" \
  "Flink ev/CPU-s" "Flink MiB" "Weir ev/s" "Weir ev/CPU-s" "Weir MiB" "rate ×" "CPU ×" \
  "chained ev/s" "chained ×"
for q in "${queries[@]}"; do
  multiples=()
  for ((run = 1; run <= runs; run++)); do
    line="$(flink "$work/$q.sql" | grep '^RESULT')"
    job="$(sed -E 's/.*job_seconds=([0-9.]+).*/\1/' <<<"$line")"
    cpu="$(sed -E 's/.*cpu_seconds=([0-9.]+).*/\1/' <<<"$line")"
    rss="$(sed -E 's/.*peak_rss_kib=([0-9]+).*/\1/' <<<"$line")"
    read -r w_rate w_cpu w_rss < <("$bench" sql --run sql --query "$q" --events "$events" --pool "$pool_size")
    read -r s_rate _ < <("$bench" sql --run sql --query "$q" --events "$events" --pool "$pool_size" \
      --chain-keyed-exchanges true)
    row="$(awk -v q="$q" -v run="$run" -v n="$events" -v job="$job" -v cpu="$cpu" -v rss="$rss" \
      -v wr="$w_rate" -v wc="$w_cpu" -v wm="$w_rss" -v sr="$s_rate" 'BEGIN {
        fr = n / job; fc = n / cpu
        printf "%-5s %3d %14.0f %16.0f %10.0f %14.0f %16.0f %10.0f %8.1f %8.1f %14.0f %8.1f\n",
          q, run, fr, fc, rss / 1024, wr, wc, wm / 1024, wr / fr, wc / fc, sr, sr / fr
      }')"
    echo "$row"
    multiples+=("$(awk '{print $9}' <<<"$row")")
  done
  if ((runs > 1)); then
    printf '%s\n' "${multiples[@]}" | sort -g | awk -v q="$q" '{ m[NR] = $1 } END {
      median = NR % 2 ? m[(NR + 1) / 2] : (m[NR / 2] + m[NR / 2 + 1]) / 2
      printf "%-5s rate × over %d runs: median %.1f, lowest %.1f\n", q, NR, median, m[1]
    }'
  fi
done
