#!/usr/bin/env bash
# Measures emu through real shells on this machine and prints the figures:
#  - TCP throughput through one `link` shell at 1, 5 and 10 Gbit/s, and the
#    CPU emu's own threads used (from emu's summary, not the command's);
#  - the delay error: how late the pumps wrote packets against the model's
#    schedule (mean, p99, min; never early by construction), under ping and
#    under a 1 Gbit/s TCP load;
#  - the RTT a zero-delay shell adds, against the same ping on loopback.
# Needs root, iperf3 and ping. Usage: sudo benches/realtime.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
cargo build --release --quiet
emu=$PWD/target/release/emu
work=$(mktemp -d)
port=5301
iperf3 -s -p $port >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5

summary() { # FILE EXPR: evaluate a Python expression over the summary JSON as s
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$1"
}

echo "## TCP throughput through one link shell (iperf3, ${seconds}s, first 2s omitted)"
echo "## with segmentation offload (default) and without (--no-offload), in one run"
printf '%-8s %-10s %14s %10s %18s\n' rate offload "goodput Mbit/s" "of rate" "emu CPU (% core)"
for rate in 1gbit 5gbit 10gbit; do
  for offload in on off; do
    log=$work/tput-$rate-$offload
    flag=$([ $offload = off ] && echo --no-offload || true)
    "$emu" --log "$log" $flag link "$rate" -- sh -c "iperf3 -c \$EMU_BASE -p $port -t $seconds -O 2 -J > $work/iperf.json"
    goodput=$(python3 -c "import json; print(json.load(open('$work/iperf.json'))['end']['sum_received']['bits_per_second']/1e6)")
    bits=$(python3 -c "print({'1gbit':1e3,'5gbit':5e3,'10gbit':1e4}['$rate'])")
    cpu=$(summary "$log/summary-0.json" "round(100*(s['process']['cpu_user_s']+s['process']['cpu_system_s'])/s['process']['wall_s'])")
    printf '%-8s %-10s %14.0f %9.1f%% %18s\n' "$rate" "$offload" "$goodput" "$(python3 -c "print(100*$goodput/$bits)")" "$cpu"
  done
done

echo
echo "## Delay error: pump write time minus the model's departure time (us)"
printf '%-34s %10s %8s %8s %8s\n' load packets mean p99 min
lateness() { # LOGDIR LABEL
  summary "$1/summary-0.json" "'\n'.join('%-34s %10d %8.1f %8.1f %8.1f' % ('$2 '+d['description']+' '+d['direction'], d['departure_lateness']['packets'], d['departure_lateness']['mean_ns']/1e3, d['departure_lateness']['p99_ns']/1e3, d['departure_lateness']['min_ns']/1e3) for d in s['directions'] if d['departure_lateness']['packets'])"
}
"$emu" --log "$work/ping" delay 10 -- sh -c 'ping -c 2000 -i 0.002 -q $EMU_BASE >/dev/null'
lateness "$work/ping" "ping 500/s"
"$emu" --busy-poll --log "$work/ping-busy" delay 10 -- sh -c 'ping -c 2000 -i 0.002 -q $EMU_BASE >/dev/null'
lateness "$work/ping-busy" "ping 500/s busy-poll"
"$emu" --log "$work/tcp" delay 10 -- link 1gbit -- sh -c "iperf3 -c \$EMU_BASE -p $port -t $seconds >/dev/null"
lateness "$work/tcp" "tcp"

echo
echo "## RTT added by a zero-delay shell (ping, 2000 packets at 500/s)"
base=$(ping -c 2000 -i 0.002 -q 127.0.0.1 | awk -F'[/ =]+' '/min\/avg/ {print $6, $7}')
through=$("$emu" delay 0 -- sh -c 'ping -c 2000 -i 0.002 -q $EMU_BASE' | awk -F'[/ =]+' '/min\/avg/ {print $6, $7}')
busy=$("$emu" --busy-poll delay 0 -- sh -c 'ping -c 2000 -i 0.002 -q $EMU_BASE' | awk -F'[/ =]+' '/min\/avg/ {print $6, $7}')
python3 - "$base" "$through" "$busy" <<'PY'
import sys
bmin, bavg = map(float, sys.argv[1].split())
print(f"loopback ping                  min {bmin*1e3:7.1f} us  avg {bavg*1e3:7.1f} us")
for label, figures in (("delay 0", sys.argv[2]), ("delay 0 --busy-poll", sys.argv[3])):
    tmin, tavg = map(float, figures.split())
    print(f"added by {label:<21} min {(tmin-bmin)*1e3:7.1f} us  avg {(tavg-bavg)*1e3:7.1f} us")
PY
