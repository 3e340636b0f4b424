#!/usr/bin/env bash
# Flink's state memory per key and per open window, measured as
# `weir-bench memory` measures Weir's: each job with few and with many keys
# (one event per key, no window firing before the end of input), the
# difference in peak RSS (and in live heap after a full collection) divided
# by the difference in keys or windows.
#
# Needs Java 17 and Flink's jars from PyPI:
#   pip install --no-deps apache-flink-libraries==2.3.0
# Usage: crates/weir-bench/flink/memory.sh [SHAPE ...]   (default: all)
# Env:   FLINK_LIB (a directory with flink-dist-*.jar; found from the pyflink
#        package otherwise), FLINK_HEAP (JVM heap, default 4g).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
source "$root/scripts/flink-env.sh"
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time not found: apt-get install -y time" >&2; exit 1; }
cp="$(flink_classpath flink-dist)"
build="$root/target/flink-peer"
mkdir -p "$build"
javac -nowarn --release 17 -cp "$cp" -d "$build" "$here/MemoryPeer.java"

heap="${FLINK_HEAP:-4g}"
jvm=(-Xms"$heap" -Xmx"$heap" "${FLINK_JVM[@]}")

# Prints "peak_rss_bytes live_heap_bytes" of one run.
run() {
  local out
  out="$(/usr/bin/time -v java "${jvm[@]}" -cp "$build:$cp" weirpeer.MemoryPeer "$1" "$2" 2>&1)" || {
    echo "$out" >&2
    exit 1
  }
  local rss live
  rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' <<<"$out")"
  live="$(sed -n 's/^RESULT .*live_heap_bytes=\([0-9-]*\).*/\1/p' <<<"$out")"
  echo "$((rss * 1024)) $live"
}

shapes=("$@")
[[ ${#shapes[@]} -gt 0 ]] || shapes=(value-state tumbling sliding session)
printf '%-12s %10s %10s %14s %14s\n' shape keys units "RSS B/unit" "heap B/unit"
for shape in "${shapes[@]}"; do
  small=100000 big=1000000 per=1 unit=key
  case "$shape" in
    value-state) ;;
    tumbling | session) unit=window ;;
    # Sixty windows per key: fewer keys keep the heap within bounds.
    sliding) big=300000 per=60 unit=window ;;
    *) echo "unknown shape: $shape" >&2; exit 2 ;;
  esac
  read -r rss0 live0 <<<"$(run "$shape" "$small")"
  read -r rss1 live1 <<<"$(run "$shape" "$big")"
  units=$(((big - small) * per))
  printf '%-12s %10s %10s %14s %14s\n' "$shape" "$big" "$units" \
    "$(((rss1 - rss0) / units))" "$(((live1 - live0) / units))"
done
