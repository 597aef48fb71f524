#!/bin/sh
# Prints criterion's mean per packet for every AQM bench (10 000 packets
# per iteration), after `cargo bench --bench aqm`.
set -eu
dir="${CARGO_TARGET_DIR:-target}/criterion/aqm"
for f in "$dir"/*/new/estimates.json; do
    name=$(basename "$(dirname "$(dirname "$f")")")
    python3 -c "import json,sys; e=json.load(open(sys.argv[1])); print('%-28s %8.1f ns/packet' % (sys.argv[2], e['mean']['point_estimate'] / 10000))" "$f" "$name"
done
