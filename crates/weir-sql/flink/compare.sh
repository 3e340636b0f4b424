#!/usr/bin/env bash
# Runs SQL cases on Flink 2.3 and on Weir over the same CSV files and diffs
# their changelogs (order-insensitive: both sides sorted).
#
#   crates/weir-sql/flink/compare.sh [--update] [CASE.sql ...]
#
# Default cases: crates/weir-sql/tests/golden/*.sql. In a case, '${DIR}'
# stands for the case's directory (for the CSV paths). --update writes
# Flink's changelog to CASE.flink.out, which `cargo test -p weir-sql`
# compares Weir's against (so CI needs no Flink).
#
# Needs Java 17 and Flink's jars from PyPI:
#   pip install --no-deps apache-flink-libraries==2.3.0
# Env: FLINK_LIB (a directory with flink-dist-*.jar; found from the pyflink
# package otherwise); WEIR_SQL_ARGS, more arguments for `weir sql` (e.g.
# "-D pipeline.operator-chaining.chain-keyed-exchanges=false").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
update=0
if [[ "${1:-}" == "--update" ]]; then update=1; shift; fi
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=("$root"/crates/weir-sql/tests/golden/*.sql)

source "$root/scripts/flink-env.sh"
cp="$(flink_classpath flink-dist flink-table flink-csv flink-json flink-cep flink-connector-files)"
build="$root/target/flink-sql-peer"
mkdir -p "$build"
javac -nowarn --release 17 -cp "$cp" -d "$build" "$here/SqlPeer.java"
jvm=(-Xmx1g "${FLINK_JVM[@]}")

cargo build -q -p weir-cli --manifest-path "$root/Cargo.toml"
weir="$root/target/debug/weir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The rows a changelog leaves (+I/+U add one, -U/-D take one back), each
# as +I[…], sorted.
materialize() {
  awk '{ kind = substr($0, 1, 2); row = substr($0, 3);
         if (kind == "+I" || kind == "+U") n[row]++; else n[row]--; }
       END { for (row in n) for (i = 0; i < n[row]; i++) print "+I" row }' | sort
}
passed=0 failed=0
for case in "${cases[@]}"; do
  name="$(basename "$case" .sql)"
  dir="$(cd "$(dirname "$case")" && pwd)"
  sed "s|\${DIR}|$dir|g" "$case" > "$work/$name.sql"
  java "${jvm[@]}" -cp "$build:$cp" weirpeer.SqlPeer "$work/$name.sql" 2> "$work/$name.flink.err" \
    | sort > "$work/$name.flink" || { echo "FAIL $name: Flink failed:"; grep -m3 -E "Exception|Error" "$work/$name.flink.err"; failed=$((failed + 1)); continue; }
  # shellcheck disable=SC2086 # WEIR_SQL_ARGS is split into arguments.
  "$weir" sql -D sql-client.execution.result-mode=changelog ${WEIR_SQL_ARGS:-} -f "$work/$name.sql" 2> "$work/$name.weir.err" \
    | grep -E '^[+-][IUD]\[' | sort > "$work/$name.weir" || true
  # A case whose changelog depends on which source's rows arrive first
  # (joins of two tables) says so; its final rows are compared instead.
  if grep -q '^-- compare: final rows' "$case"; then
    for side in flink weir; do
      materialize < "$work/$name.$side" > "$work/$name.$side.final"
      mv "$work/$name.$side.final" "$work/$name.$side"
    done
  fi
  if diff -u "$work/$name.flink" "$work/$name.weir" > "$work/$name.diff"; then
    echo "PASS $name ($(wc -l < "$work/$name.flink") rows)"
    passed=$((passed + 1))
  else
    echo "FAIL $name (--- Flink, +++ Weir):"
    cat "$work/$name.diff"
    cat "$work/$name.weir.err"
    failed=$((failed + 1))
  fi
  if [[ $update == 1 ]]; then cp "$work/$name.flink" "$dir/$name.flink.out"; fi
done
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
