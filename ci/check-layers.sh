#!/usr/bin/env bash
# Checks that workspace crates depend only on crates of lower layers
# (ARCHITECTURE.md): state < runtime < web < weir < connectors < sql < cli < examples/bench.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
layer = {
    "weir-state": 0, "weir-state-rocksdb": 1, "weir-runtime": 2, "weir-web": 2.5,
    "weir": 3, "weir-connectors": 4, "weir-nexmark": 4, "weir-sql": 4.5, "weir-cli": 5,
    "weir-examples": 6, "weir-bench": 6,
}
meta = json.load(sys.stdin)
members = {p["name"] for p in meta["packages"]}
bad = []
for p in meta["packages"]:
    name = p["name"]
    if name not in layer:
        bad.append(f"{name}: not in the layer table of ci/check-layers.sh")
        continue
    for d in p["dependencies"]:
        if d["name"] in members and d.get("kind") != "dev" and layer[d["name"]] >= layer[name]:
            bad.append(f"{name} -> {d['name']}: reaches up or sideways")
for b in bad:
    print("layering:", b)
sys.exit(1 if bad else 0)
'
echo "crate layering ok"
