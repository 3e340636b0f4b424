#!/usr/bin/env bash
# The same SQL jobs on Flink 2.3 and on `weir sql`: rows per second, CPU
# seconds and peak RSS of each. Each job reads N rows from the `datagen`
# connector (a sequence 1..N, so both engines compute the same results;
# keys and event times are computed columns) into a `blackhole` table, at
# parallelism 1:
#
#   filter: SELECT id, k FROM src WHERE MOD(id, 7) = 0
#   group:  SELECT k, COUNT(*), SUM(id) FROM src GROUP BY k       (10 000 keys)
#   window: TUMBLE of 10 s over TO_TIMESTAMP_LTZ(id, 3), GROUP BY k, window
#
# Flink's rate is over the INSERT alone (submission to end, as SqlPeer
# reports it; JVM start and planning excluded); its CPU seconds and RSS are
# the whole process's. Weir's are the whole `weir sql` process's.
#
# Needs Java 17, Flink's jars (pip install --no-deps
# apache-flink-libraries==2.3.0) and /usr/bin/time.
# Usage: crates/weir-bench/flink/sql_rate.sh [ROWS]   (default 5000000)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
rows="${1:-5000000}"
source "$root/scripts/flink-env.sh"
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time not found: apt-get install -y time" >&2; exit 1; }
cp="$(flink_classpath flink-dist flink-table flink-cep)"
build="$root/target/flink-sql-peer"
mkdir -p "$build"
javac -nowarn --release 17 -cp "$cp" -d "$build" "$root/crates/weir-sql/flink/SqlPeer.java"
cargo build -q --release -p weir-cli --manifest-path "$root/Cargo.toml"
weir="$root/target/release/weir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

source_ddl="CREATE TABLE src (
  id BIGINT, k AS MOD(id, 10000), ts AS TO_TIMESTAMP_LTZ(id, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '$rows');"
cat > "$work/filter.sql" <<EOF
$source_ddl
CREATE TABLE sunk (id BIGINT, k BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sunk SELECT id, k FROM src WHERE MOD(id, 7) = 0;
EOF
cat > "$work/group.sql" <<EOF
$source_ddl
CREATE TABLE sunk (k BIGINT, n BIGINT, total BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sunk SELECT k, COUNT(*), SUM(id) FROM src GROUP BY k;
EOF
cat > "$work/window.sql" <<EOF
$source_ddl
CREATE TABLE sunk (k BIGINT, ws TIMESTAMP(3), n BIGINT, total BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sunk SELECT k, window_start, COUNT(*), SUM(id)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY k, window_start, window_end;
EOF

# "seconds cpu_seconds rss_mib" of /usr/bin/time -v output in $1, the job's
# seconds from $2 (empty: the process's wall time).
measure() {
  local out="$1" job="$2"
  local wall user sys rss
  wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' <<<"$out" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')"
  user="$(sed -n 's/.*User time (seconds): //p' <<<"$out")"
  sys="$(sed -n 's/.*System time (seconds): //p' <<<"$out")"
  rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' <<<"$out")"
  echo "${job:-$wall} $(echo "$user + $sys" | bc) $((rss / 1024))"
}

printf '%-7s %-6s %12s %10s %12s %9s\n' job engine rows/s seconds cpu-seconds rss-MiB
for job in filter group window; do
  out="$(/usr/bin/time -v java -Xmx2g "${FLINK_JVM[@]}" -cp "$build:$cp" weirpeer.SqlPeer "$work/$job.sql" 2>&1)" || {
    echo "$out" >&2
    exit 1
  }
  ms="$(sed -n 's/^INSERT took \([0-9]*\) ms$/\1/p' <<<"$out")"
  read -r secs cpu rss <<<"$(measure "$out" "$(echo "scale=3; $ms / 1000" | bc)")"
  printf '%-7s %-6s %12.0f %10.2f %12.2f %9d\n' "$job" flink "$(echo "$rows / $secs" | bc -l)" "$secs" "$cpu" "$rss"
  out="$(/usr/bin/time -v "$weir" sql -f "$work/$job.sql" 2>&1)" || {
    echo "$out" >&2
    exit 1
  }
  read -r secs cpu rss <<<"$(measure "$out" "")"
  printf '%-7s %-6s %12.0f %10.2f %12.2f %9d\n' "$job" weir "$(echo "$rows / $secs" | bc -l)" "$secs" "$cpu" "$rss"
done
