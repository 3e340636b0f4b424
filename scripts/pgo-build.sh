#!/usr/bin/env bash
# Builds `weir` and `weir-bench` with profile-guided optimisation: an
# instrumented build runs every Nexmark query (DataStream and SQL) and the
# engine's DataStream benchmarks, and the release build is then laid out
# and inlined from the counts they left. The binaries go to
# target/pgo/release/ (the plain release build in target/release/ is left
# as it is).
#
# Needs `llvm-profdata` of LLVM 19 or later: rustup's (`rustup component
# add llvm-tools`), one on PATH, or Debian's `llvm-19`, installed here with
# apt-get when none is found (with sudo when not root). LLVM_PROFDATA
# names another.
#
# Usage: scripts/pgo-build.sh [TRAINING_EVENTS]
#        (events per training query, default 2000000)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
events="${1:-2000000}"
[[ "$events" =~ ^[1-9][0-9]*$ ]] || {
  echo "TRAINING_EVENTS must be a positive number, not '$events' (--help for usage)" >&2
  exit 2
}

# The newest llvm-profdata there is: rustup's matches the compiler's LLVM;
# another must read the raw profiles of the compiler's (Debian's LLVM 19
# merges those of rustc 1.95, on LLVM 22); the merge says if it cannot.
find_profdata() {
  if [[ -n "${LLVM_PROFDATA:-}" ]]; then
    echo "$LLVM_PROFDATA"
    return
  fi
  local sysroot candidate
  sysroot="$(rustc --print sysroot)"
  for candidate in "$sysroot"/lib/rustlib/*/bin/llvm-profdata; do
    [[ -x "$candidate" ]] && { echo "$candidate"; return; }
  done
  for candidate in llvm-profdata-{30..19} /usr/lib/llvm-{30..19}/bin/llvm-profdata; do
    command -v "$candidate" >/dev/null 2>&1 && { command -v "$candidate"; return; }
  done
}
profdata="$(find_profdata)"
if [[ -z "$profdata" ]] && command -v apt-get >/dev/null 2>&1; then
  as_root=()
  [[ "$(id -u)" -ne 0 ]] && as_root=(sudo)
  echo "installing llvm-19 for llvm-profdata" >&2
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq llvm-19 >&2
  profdata="$(find_profdata)"
fi
if [[ -z "$profdata" ]]; then
  echo "no llvm-profdata of LLVM 19 or later: run 'rustup component add llvm-tools'," >&2
  echo "install Debian's llvm-19, or set LLVM_PROFDATA" >&2
  exit 1
fi

work="$root/target/pgo-profile"
rm -rf "$work"
mkdir -p "$work/raw"
packages=(-p weir-bench -p weir-cli)

echo "1/3 instrumented build (target/pgo-instrumented)" >&2
RUSTFLAGS="-Cprofile-generate=$work/raw" cargo build --release "${packages[@]}" \
  --manifest-path "$root/Cargo.toml" --target-dir "$root/target/pgo-instrumented"
# Build scripts were instrumented too: only the training's counts count.
rm -f "$work"/raw/*

echo "2/3 training, $events events a query" >&2
bench="$root/target/pgo-instrumented/release/weir-bench"
# Every Nexmark query `weir-bench sql` knows, DataStream and SQL.
"$bench" sql --events "$events" >&2
for job in stateless windows state; do
  "$bench" "$job" --events "$events" >&2
done
"$profdata" merge -o "$work/weir.profdata" "$work"/raw/*.profraw || {
  echo "$profdata could not merge the compiler's raw profiles (LLVM $(rustc -vV | sed -n 's/^LLVM version: //p')):" >&2
  echo "run 'rustup component add llvm-tools' or set LLVM_PROFDATA to a newer one" >&2
  exit 1
}

echo "3/3 optimised build (target/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$work/weir.profdata" cargo build --release "${packages[@]}" \
  --manifest-path "$root/Cargo.toml" --target-dir "$root/target/pgo"
echo "built: $root/target/pgo/release/weir and $root/target/pgo/release/weir-bench"
