#!/usr/bin/env bash
# Measures `emu run` on a 4-flow dumbbell and prints, per bottleneck rate
# (1 and 10 Gbit/s by default):
#  - the aggregate goodput of 4 cubic flows (4 senders on the left, 4
#    receivers on the right, no delay), as a ratio to the same 4 flows over
#    a veth pair between two namespaces, measured in the same run;
#  - CPU used (emu with its flows' iperf3s, and the veth run's iperf3s), in
#    cores;
#  - each link's timing error: how late the fabric wrote packets into each
#    receiving host against the model's departure time (p99 and max per
#    host side link; the hops in between are exact in model time, so this
#    is the whole path's error).
# On a shared machine, EMU_BENCH_LOCK=FILE makes it hold that lock
# exclusively while it measures (as benches/datapath.sh does).
# Each rate runs twice, with the hosts' offload off (the default) and on
# (`offload = true`: TCP super-packets through the hosts' devices);
# OFFLOAD="true" or "false" runs one of them. The veth pair is measured
# after each emu run, so every ratio compares two runs a few seconds apart.
# Needs root, iperf3, python3. Usage: sudo benches/dumbbell.sh [SECONDS] [RATES]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
rates=${2:-"1gbit 10gbit"}
if [ -z "${EMU_BENCH_LOCKED:-}" ]; then
  cargo build --release --quiet --bin emu
  if [ -n "${EMU_BENCH_LOCK:-}" ]; then
    exec env EMU_BENCH_LOCKED=1 flock -x "$EMU_BENCH_LOCK" "$0" "$@"
  fi
fi
emu=$PWD/target/release/emu
work=$(mktemp -d)
ns_a=emu-bench-a-$$ ns_b=emu-bench-b-$$
cleanup() {
  ip netns pids "$ns_b" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
omit=2

experiment() { # RATE OFFLOAD
  cat <<TOML
[run]
name = "dumbbell"
duration = "${seconds}s"
offload = $2
[hosts.s1]
side = "left"
[hosts.s2]
side = "left"
[hosts.s3]
side = "left"
[hosts.s4]
side = "left"
[hosts.r1]
side = "right"
[hosts.r2]
side = "right"
[hosts.r3]
side = "right"
[hosts.r4]
side = "right"
[bottleneck]
rate = "$1"
queue = "droptail bytes 4000000"
TOML
  for i in 1 2 3 4; do
    printf '[[flows]]\nname = "f%s"\nfrom = "s%s"\nto = "r%s"\ncc = "cubic"\nomit = "%ss"\n' "$i" "$i" "$i" "$omit"
  done
}

cpu_of() { # OUT FILE of /usr/bin/time -f "%U %S %e": cores used
  python3 -c "import sys; u,s,e=map(float,open(sys.argv[1]).read().split()[-3:]); print('%.2f' % ((u+s)/e))" "$1"
}

veth() { # the same 4 flows over a veth pair: aggregate bit/s
  ip netns add "$ns_a"
  ip netns add "$ns_b"
  ip link add veth-emu-a netns "$ns_a" type veth peer name veth-emu-b netns "$ns_b"
  ip -n "$ns_a" addr add 10.99.0.1/24 dev veth-emu-a
  ip -n "$ns_b" addr add 10.99.0.2/24 dev veth-emu-b
  for n in "$ns_a" "$ns_b"; do ip -n "$n" link set lo up; done
  ip -n "$ns_a" link set veth-emu-a up
  ip -n "$ns_b" link set veth-emu-b up
  for i in 1 2 3 4; do ip netns exec "$ns_b" iperf3 -s -1 -p $((5300 + i)) >/dev/null 2>&1 & done
  sleep 0.5
  /usr/bin/time -f "%U %S %e" -o "$work/veth.time" sh -c "
    for i in 1 2 3 4; do
      ip netns exec $ns_a iperf3 -c 10.99.0.2 -p \$((5300 + i)) -C cubic -t $((seconds - omit)) -O $omit -J > $work/veth-\$i.json &
    done
    wait"
  wait
  python3 -c "
import json, sys
print(sum(json.load(open('$work/veth-%d.json' % i))['end']['sum_received']['bits_per_second'] for i in range(1, 5)))"
  ip netns del "$ns_a"
  ip netns del "$ns_b"
}

echo "## 4 cubic flows through a dumbbell (emu run) vs over a veth pair, ${seconds}s each, first ${omit}s omitted"
printf '%-8s %-8s %14s %14s %8s %10s %10s %22s %22s\n' \
  rate offload "emu Mbit/s" "veth Mbit/s" ratio "emu cores" "veth cores" "p99 late us (hosts)" "max late us (hosts)"
for rate in $rates; do
for offload in ${OFFLOAD:-false true}; do
  experiment "$rate" "$offload" > "$work/dumbbell.toml"
  /usr/bin/time -f "%U %S %e" -o "$work/emu.time" \
    "$emu" run "$work/dumbbell.toml" --out "$work/out-$rate-$offload" --json > "$work/emu.json"
  run=$work/out-$rate-$offload/dumbbell/cell-0/run-0
  emu_bps=$(python3 -c "
import json
r = json.load(open('$run/result.json'))
print(sum(f['goodput_bps'] or 0 for f in r['flows']))")
  late=$(python3 -c "
import json
links = json.load(open('$run/links.json'))['links']
late = [l['delivery_lateness'] for l in links if 'delivery_lateness' in l and l['delivery_lateness']['packets']]
print('%.0f/%.0f %.0f/%.0f' % (max(l['p99_ns'] for l in late if l is not None) / 1e3,
                               min(l['p99_ns'] for l in late) / 1e3,
                               max(l['max_ns'] for l in late) / 1e3,
                               min(l['max_ns'] for l in late) / 1e3))")
  veth_bps=$(veth)
  printf '%-8s %-8s %14.0f %14.0f %8.3f %10s %10s %22s %22s\n' "$rate" "$offload" \
    "$(python3 -c "print($emu_bps/1e6)")" "$(python3 -c "print($veth_bps/1e6)")" \
    "$(python3 -c "print($emu_bps/$veth_bps)")" \
    "$(cpu_of "$work/emu.time")" "$(cpu_of "$work/veth.time")" \
    "${late% *} (worst/best)" "${late#* } (worst/best)"
  python3 -c "
import json
for l in json.load(open('$run/links.json'))['links']:
    d = l.get('delivery_lateness')
    if d and d['packets']:
        print('   %-16s to host: %9d packets, p50 %6.1f us, p99 %7.1f us, max %8.1f us' % (
            l['link'], d['packets'], d['p50_ns'] / 1e3, d['p99_ns'] / 1e3, d['max_ns'] / 1e3))
print('   accounting holds:', json.load(open('$run/links.json'))['accounting_holds'])"
done
done
