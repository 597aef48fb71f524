#!/usr/bin/env bash
# A/B of emu builds (or experiment files) on one experiment cell, the
# variants alternated within each round so that a machine's drift falls on
# all of them alike. Per run it prints the first flow's goodput and CE
# marks, the worst host's p99 delivery lateness and the run's timing
# verdict (links.json), and the VM's steal time over the run (/proc/stat).
# Runs hold /tmp/emu-net.lock, so they do not overlap other network work.
#
# Usage: sudo benches/alternate.sh ROUNDS OUT EMU:FILE [EMU:FILE...]
#   e.g. benches/alternate.sh 4 /tmp/ab old/emu:prague.toml target/release/emu:prague.toml
set -euo pipefail
rounds=$1 out=$2
shift 2
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for variant in "$@"; do
    emu=${variant%%:*} file=${variant#*:}
    name=$(echo "$variant" | tr '/:.' '___')-$round
    dir=$out/$name
    rm -rf "$dir"
    steal() { awk '/^cpu /{print $9}' /proc/stat; }
    before=$(steal)
    flock /tmp/emu-net.lock "$emu" run "$file" --out "$dir" >"$dir.log" 2>&1
    after=$(steal)
    python3 - "$dir" "$variant" "$round" $(( (after - before) * 10 )) <<'PY' | tee -a "$out/summary.txt"
import glob, json, sys
d, variant, rnd, steal_ms = sys.argv[1:]
result = json.load(open(glob.glob(f"{d}/*/cell-0/run-0/result.json")[0]))
links = json.load(open(glob.glob(f"{d}/*/cell-0/run-0/links.json")[0]))
flow = result["flows"][0]
late = max((l.get("delivery_lateness", {}).get("p99_ns", 0) for l in links["links"]), default=0)
kept = links.get("timing", {}).get("kept_time", "-")
print(f"{variant:50} round {rnd} goodput {flow['goodput_bps'] / 1e6:6.2f} Mbit/s  "
      f"CE {flow.get('ce_marks', '?')}  late p99 {late / 1e6:.2f} ms  kept_time {kept}  "
      f"steal {steal_ms} ms")
PY
  done
done
