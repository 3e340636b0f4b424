#!/usr/bin/env bash
# Installs the system libraries Weir's tests build against: Debian's RocksDB
# (linked by weir-state-rocksdb instead of compiling RocksDB's C++) and
# libclang (for its bindings). Idempotent; uses sudo when not root.
set -euo pipefail
packages=(librocksdb-dev libclang-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq "${missing[@]}"
