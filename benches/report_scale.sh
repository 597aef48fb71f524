#!/bin/sh
# Measures `emu report` on a generated log of RECORDS records (default
# 10^8: about 400 s of a 1 Gbit/s link, 4.8 GB) and prints its wall time,
# CPU time and peak memory. Needs GNU time (/usr/bin/time) and the space.
#
#   benches/report_scale.sh [RECORDS] [DIR]
set -eu
records=${1:-100000000}
dir=${2:-${TMPDIR:-/tmp}/emu-report-scale}
cd "$(dirname "$0")/.."
cargo build --release -q --bin emu && cargo build --release -q -p report --example synth_log
rm -rf "$dir"
mkdir -p "$dir"
./target/release/examples/synth_log "$dir/run" "$records"
size=$(stat -c %s "$dir/run/0-link.emulog")
echo "log: $records records requested, $size bytes"
/usr/bin/time -f "report: %e s wall, %U s user, %S s system, peak memory %M KiB" \
    ./target/release/emu report "$dir/run" --out "$dir/report"
rm -rf "$dir"
