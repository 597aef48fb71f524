#!/usr/bin/env bash
# The data path's cost, measured in one run against the kernel's own veth
# pair (two namespaces this script creates) and, with EMU_BEFORE=path,
# against a second emu binary, with ratios:
#  - TCP up/down through a zero-delay shell;
#  - the RTT a zero-delay shell adds to the veth pair's (min/mean/p99), and
#    what `delay 20` adds beyond its 40 ms round trip (min/mean);
#  - emu's own CPU carrying bulk TCP through `link 10mbit` (also with
#    `--spin 0`: what exact timing costs), `link 100mbit` and `link 1gbit`,
#    and an idle shell's;
#  - MTU-sized UDP (iperf3 -u -b 0 -l 1472) and TCP with --no-offload
#    (through delay 0 and through a 12 Gbit/s trace), with the datagrams
#    the kernel dropped before emu read them;
#  - TCP through `link 10gbit` (offload on);
#  - the pumps' lateness (write time minus the model's departure) at
#    10 Mbit/s, 100 Mbit/s, 1 Gbit/s and 10 Gbit/s (and of the returning
#    acknowledgements at 10 and 100 Mbit/s), and whether p99 <= 100 us
#    holds;
#  - 1, 2 and 3 nested zero-delay shells: throughput, added RTT, CPU, and
#    how often emu's threads woke per ping.
# A benchmark, not a test: it asserts nothing.
#
# Usage: sudo [EMU=path] [EMU_BEFORE=path] benches/datapath.sh [SECONDS [ROUNDS]]
#   SECONDS per throughput row (default 3: the short mode; 10 for a
#   careful run). Needs iperf3, ping and python3 (scripts/install-deps).
#   ROUNDS (default 1) measures everything that many times, the veth pair,
#   emu and the emu before interleaved (which binary goes first alternates
#   from round to round, so a drift in the host's load falls on both), and
#   prints each row's median with its range over the rounds: on a shared
#   virtual machine one run of a row swings by tens of percent, and a
#   change smaller than that shows only across rounds. With EMU_BEFORE and
#   more than one round, each row gets the p-value of an exact rank test
#   of after against before (5 rounds can show p = 0.008; 3 rounds no
#   less than 0.1).
#   EMU_BENCH_ONLY=GROUP,... measures only those groups of rows, for more
#   rounds of what a change is about: nested (1-3 nested delay 0 shells),
#   rtt40 (delay 20), down, idle, links (10 Mbit/s to 10 Gbit/s, and
#   --spin 0), udp, nooffload.
#   EMU_BENCH_KEEP=DIR keeps each round's raw figures there
#   ({veth,after,before}-ROUND.vals, one KEY=VALUE a line), to look into a
#   round that stands out or to set runs side by side.
# On a machine shared with builds or tests, give EMU_BENCH_LOCK=FILE: the
# bench holds that lock exclusively while it measures, so whatever else
# takes it (shared) waits instead of disturbing the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${EMU_BENCH_LOCK:-}" ] && [ -z "${EMU_BENCH_LOCKED:-}" ]; then
  export EMU_BENCH_LOCKED=1
  exec flock -x "$EMU_BENCH_LOCK" "$0" "$@"
fi
seconds=${1:-3}
rounds=${2:-1}
only=${EMU_BENCH_ONLY:-}
groups=nested,rtt40,down,idle,links,udp,nooffload
for group in ${only//,/ }; do
  [[ ",$groups," == *",$group,"* ]] || { echo "datapath.sh: EMU_BENCH_ONLY names '$group', which is not a group of rows: give some of $groups" >&2; exit 2; }
done
case "$seconds$rounds" in
  *[!0-9]*) echo "datapath.sh: SECONDS and ROUNDS are whole numbers (given: '$seconds' '$rounds')" >&2; exit 2 ;;
esac
[ "$rounds" -ge 1 ] || { echo "datapath.sh: ROUNDS must be at least 1" >&2; exit 2; }
after=${EMU:-$PWD/target/release/emu}
before=${EMU_BEFORE:-}
[ -x "$after" ] || { echo "datapath.sh: no emu binary at $after: build it with cargo build --release, or set EMU=path" >&2; exit 2; }
if [ -n "$before" ] && [ ! -x "$before" ]; then
  echo "datapath.sh: EMU_BEFORE=$before is not an executable" >&2; exit 2
fi
for tool in iperf3 ping python3; do
  command -v $tool >/dev/null || { echo "datapath.sh: $tool is missing: run scripts/install-deps" >&2; exit 2; }
done

work=$(mktemp -d)
port=5321
nsa=emu-bench-a-$$
nsb=emu-bench-b-$$
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  ip netns pids $nsb 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns del $nsa 2>/dev/null
  ip netns del $nsb 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# The baseline: a veth pair between two namespaces.
ip netns add $nsa
ip netns add $nsb
ip link add bench-a-$$ netns $nsa type veth peer name bench-b-$$ netns $nsb
ip -n $nsa addr add 10.250.0.1/24 dev bench-a-$$
ip -n $nsb addr add 10.250.0.2/24 dev bench-b-$$
ip -n $nsa link set bench-a-$$ up
ip -n $nsb link set bench-b-$$ up
ip -n $nsa link set lo up
ip -n $nsb link set lo up
# A server left busy by a test whose client vanished restarts once idle
# for 5 s, rather than refuse every row after it.
ip netns exec $nsb iperf3 -s -p $port --idle-timeout 5 >/dev/null 2>&1 &
iperf3 -s -p $port --idle-timeout 5 >/dev/null 2>&1 &
server=$!
sleep 0.5

# iperf3 JSON -> Gbit/s received
tput() { python3 -c '
import json,sys
e=json.load(open(sys.argv[1]))["end"]
print("%.2f" % (e["sum_received"]["bits_per_second"]/1e9))
' "$1"; }
# iperf3 UDP JSON -> "Gbit/s-received lost% datagrams-sent"
udp() { python3 -c '
import json,sys
e=json.load(open(sys.argv[1]))["end"]; s=e["sum"]
sent=s.get("packets",0); lost=s.get("lost_packets",0)
rx=e.get("sum_received",{}).get("bits_per_second", s["bits_per_second"]*(1-s.get("lost_percent",0)/100))
print("%.2f %.1f %d" % (rx/1e9, s.get("lost_percent",0), sent))
' "$1"; }
# ping output -> "min mean p99" in us
rtt() { python3 -c '
import re,sys
t=sorted(float(x)*1000 for x in re.findall(r"time=([0-9.]+)", open(sys.argv[1]).read()))
if not t: print("nan nan nan"); sys.exit()
print("%.0f %.0f %.0f" % (t[0], sum(t)/len(t), t[min(len(t)-1, int(0.99*len(t)))]))
' "$1"; }
# ping -q output -> "min mean" RTT in us from its summary line, which
# keeps microseconds where each reply through a 40 ms path prints tenths
# of a millisecond
rtt_exact() { python3 -c '
import re,sys
m=re.search(r"= ([0-9.]+)/([0-9.]+)/", open(sys.argv[1]).read())
print("%.1f %.1f" % (float(m[1])*1000, float(m[2])*1000) if m else "nan nan")
' "$1"; }
# checked LABEL: after an emu run whose command ran iperf3 into
# $work/j.json, leaves its figures out if iperf3 failed (a server still
# busy with a test whose client vanished, say): its throughput is empty
# already, and emptying emu's output makes CPU and lateness nan too, where
# they would be those of a run that carried nothing.
checked() {
  local error
  error=$(python3 -c '
import json,sys
try:
    e=json.load(open(sys.argv[1]))
except Exception as x:
    print("no result: %s" % x); sys.exit()
end=e.get("end",{})
if e.get("error") or not (end.get("sum_received") or end.get("sum")):
    print(e.get("error","no result"))
' "$work/j.json")
  if [ -n "$error" ]; then
    echo "datapath.sh: $1 with $emu: iperf3 failed ($error); this round leaves its figures out" >&2
    : > "$work/s"
  fi
}
# iperf_through LABEL IPERF_ARGS EMU_ARGS...: one emu row, `$emu --stats
# EMU_ARGS sh -c "$iperf IPERF_ARGS"` (EMU_ARGS end with the shells' `--`),
# iperf3's JSON in $work/j.json (its stderr in $work/iperf.err), emu's
# summary in $work/s, then `checked LABEL`. `$emu` and `$iperf` are those of
# the measure() that calls it.
iperf_through() {
  local label=$1 args=$2
  shift 2
  "$emu" --stats "$@" sh -c "$iperf $args -J > $work/j.json 2> $work/iperf.err" 2> "$work/s"
  checked "$label"
}
# emu --stats output -> CPU % of one core
cpu() { python3 -c '
import re,sys
m=re.search(r"([0-9.]+) s user \+ ([0-9.]+) s system over ([0-9.]+) s", open(sys.argv[1]).read())
print("%.1f" % (100*(float(m[1])+float(m[2]))/float(m[3])) if m else "nan")
' "$1"; }
# emu --stats output and a count of pings -> emu's thread wake-ups per ping
# (the whole run's, so setup adds a little; n/a for an emu that does not
# count them)
wakes() { python3 -c '
import re,sys
m=re.search(r"slept and woke (\d+) times", open(sys.argv[1]).read())
print("%.2f" % (int(m[1])/int(sys.argv[2])) if m else "nan")
' "$1" "$2"; }
# emu --stats output -> "mean p99" lateness in us of the busiest direction
# (the data), then "mean p99" of the quietest one that carried packets (the
# acknowledgements, each due a serialization time after it was read)
late() { python3 -c '
import re,sys
rows=re.findall(r"read (\d+).*written late by mean ([0-9.]+) us, p99 ([0-9.]+) us", open(sys.argv[1]).read())
rows=[r for r in rows if int(r[0]) > 0]
if not rows: print("nan nan nan nan"); sys.exit()
r=max(rows, key=lambda r:int(r[0])); a=min(rows, key=lambda r:int(r[0]))
print(r[1], r[2], a[1], a[2])
' "$1"; }
# emu --stats output -> packets read on the uplink of the outermost shell,
# and the kernel's drops on the way in when this emu reports them
reads() { python3 -c '
import re,sys
s=open(sys.argv[1]).read()
m=re.search(r"uplink: read (\d+)", s)
k=re.findall(r"the kernel dropped (\d+) on the way in", s)
print(m[1] if m else "nan", sum(map(int,k)) if k else "n/a")
' "$1"; }

# UDP datagrams this namespace's receiving sockets dropped for want of
# buffer space, since it was created (what emu's summary counts as lost
# past the path): measured here, so the veth pair and an emu that does not
# count them get the same row
udp_buffer_drops() { awk '/^Udp:/ { if (!names) { for (i = 2; i <= NF; i++) n[i] = $i; names = 1 }
  else for (i = 2; i <= NF; i++) if (n[i] == "RcvbufErrors" || n[i] == "MemErrors") s += $i }
  END { print s + 0 }' /proc/net/snmp; }

pings=$((seconds * 400))
ping_args="-c $pings -i 0.002"
veth_ping() { ip netns exec $nsa ping $ping_args 10.250.0.2 > "$work/ping-veth"; rtt "$work/ping-veth"; }
veth_tcp() { ip netns exec $nsa iperf3 -c 10.250.0.2 -p $port -t "$seconds" $1 -J > "$work/veth.json"; tput "$work/veth.json"; }
veth_receiver_drops() { ip netns exec $nsb bash -c "$(declare -f udp_buffer_drops); udp_buffer_drops"; }

# want GROUP: whether EMU_BENCH_ONLY (a comma-separated list of groups;
# empty: all) asks for GROUP's rows.
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

# measure_veth FILE: the baseline's rows the groups asked for need;
# writes KEY=value lines.
measure_veth() {
  local out=$1
  : > "$out"
  if want nested || want nooffload; then echo "up=$(veth_tcp "")" >> "$out"; fi
  if want down; then echo "down=$(veth_tcp -R)" >> "$out"; fi
  if want nested || want rtt40; then echo "rtt=$(veth_ping)" >> "$out"; fi
  if want udp; then
    local drops=$(veth_receiver_drops)
    ip netns exec $nsa iperf3 -c 10.250.0.2 -p $port -t "$seconds" -u -b 0 -l 1472 -J > "$work/veth.json" 2>/dev/null
    echo "udp=$(udp "$work/veth.json") $(( $(veth_receiver_drops) - drops ))" >> "$out"
  fi
}

# measure BIN KEY: runs every emu row with one binary; writes KEY=value lines.
measure() {
  local emu=$1 out=$work/$2.vals
  : > "$out"
  local iperf="iperf3 -c \$EMU_BASE -p $port -t $seconds"
  local shells=(delay 0 --)
  local depths=""
  want nested && depths="1 2 3"
  for depth in $depths; do
    [ $depth -gt 1 ] && shells+=(delay 0 --)
    iperf_through "$depth nested delay 0" "" "${shells[@]}"
    echo "tcp_up_$depth=$(tput $work/j.json)" >> "$out"
    echo "cpu_up_$depth=$(cpu $work/s)" >> "$out"
    "$emu" --stats "${shells[@]}" sh -c "ping $ping_args \$EMU_BASE > $work/p" 2> "$work/s"
    echo "rtt_$depth=$(rtt $work/p)" >> "$out"
    echo "wakes_$depth=$(wakes $work/s $pings)" >> "$out"
  done
  # A sparse flow through a real delay: what the pumps' lateness and the
  # readers' wake-ups add to a 40 ms round trip.
  if want rtt40; then
    "$emu" --stats delay 20 -- sh -c "ping -q -c $((seconds * 100)) -i 0.01 \$EMU_BASE > $work/p" 2> "$work/s"
    echo "rtt_40ms=$(rtt_exact $work/p)" >> "$out"
  fi
  if want down; then
    iperf_through "TCP down" -R delay 0 --
    echo "tcp_down=$(tput $work/j.json)" >> "$out"
  fi
  if want idle; then
    "$emu" --stats delay 0 -- sleep "$seconds" 2> "$work/s"
    echo "cpu_idle=$(cpu $work/s)" >> "$out"
  fi
  local rates=""
  want links && rates="10mbit 100mbit 1gbit 10gbit"
  for rate in $rates; do
    iperf_through "link $rate" "" link $rate --
    echo "link_$rate=$(tput $work/j.json)" >> "$out"
    echo "cpu_$rate=$(cpu $work/s)" >> "$out"
    echo "late_$rate=$(late $work/s)" >> "$out"
  done
  # Without the spin: what exactness costs at a low rate.
  if want links; then
    iperf_through "--spin 0 link 10mbit" "" --spin 0 link 10mbit --
    echo "cpu_nospin=$(cpu $work/s)" >> "$out"
    echo "late_nospin=$(late $work/s)" >> "$out"
  fi
  if want udp; then
    local receiver_drops=$(udp_buffer_drops)
    iperf_through "UDP flood" "-u -b 0 -l 1472" delay 0 --
    echo "udp=$(udp $work/j.json)" >> "$out"
    echo "udp_receiver_drops=$(( $(udp_buffer_drops) - receiver_drops ))" >> "$out"
    echo "udp_reads=$(reads $work/s)" >> "$out"
    echo "late_udp=$(late $work/s)" >> "$out"
  fi
  want nooffload || return 0
  iperf_through "--no-offload delay 0" "" --no-offload delay 0 --
  echo "tcp_nooffload=$(tput $work/j.json)" >> "$out"
  echo "late_nooffload=$(late $work/s)" >> "$out"
  # MTU-sized packets through a 12 Gbit/s delivery trace (1000 opportunities
  # each millisecond), the path a trace-driven emulator without offload sees.
  iperf_through "--no-offload 12 Gbit/s trace" "" --no-offload link \
    --uplink-trace "$work/12gbit.trace" --downlink-trace "$work/12gbit.trace" --
  echo "tcp_trace12=$(tput $work/j.json)" >> "$out"
  echo "late_trace12=$(late $work/s)" >> "$out"
}
printf "1\n%.0s" $(seq 1000) > "$work/12gbit.trace"

echo "# emu data path, $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), ${seconds}s per throughput row, $pings pings at 500/s, $rounds round(s)"
echo "# after:  $after"
[ -n "$before" ] && echo "# before: $before"
for round in $(seq "$rounds"); do
  measure_veth "$work/veth-$round.vals"
  if [ -n "$before" ] && [ $((round % 2)) -eq 0 ]; then
    measure "$before" "before-$round"
    measure "$after" "after-$round"
  else
    measure "$after" "after-$round"
    [ -n "$before" ] && measure "$before" "before-$round"
  fi
  [ "$rounds" -gt 1 ] && echo "# round $round of $rounds measured" >&2
done
# The veth RTT again, after the emu rows: the baseline is the median of
# every veth ping (with one round, the mean of the two).
: > "$work/veth-end.vals"
if want nested || want rtt40; then echo "rtt=$(veth_ping)" > "$work/veth-end.vals"; fi

if [ -n "${EMU_BENCH_KEEP:-}" ]; then
  mkdir -p "$EMU_BENCH_KEEP" && cp "$work"/*.vals "$EMU_BENCH_KEEP"/
fi

python3 - "$work" "$rounds" "${before:+1}" <<'PY'
import sys
from itertools import combinations
from math import comb, erfc
from statistics import median
work, rounds, has_before = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"

def load(name):
    vals = {}
    for line in open(f"{work}/{name}.vals"):
        k, v = line.rstrip("\n").split("=", 1)
        vals[k] = v.split()
    return vals

def num(v, i=0):
    try:
        return float(v[i])
    except (ValueError, IndexError):
        return float("nan")

# Each run: its values per round.
veth = [load(f"veth-{r}") for r in range(1, rounds + 1)]
runs = [("after", [load(f"after-{r}") for r in range(1, rounds + 1)])]
if has_before:
    runs.insert(0, ("before", [load(f"before-{r}") for r in range(1, rounds + 1)]))

def middle(values):
    """The median of the figures that were measured (nan if none was)."""
    values = [v for v in values if v == v]
    return median(values) if values else float("nan")

def veth_figure(key, i=0):
    return middle(num(v.get(key, []), i) for v in veth)

veth_up, veth_down = veth_figure("up"), veth_figure("down")
veth_rtt = [middle([num(v.get("rtt", []), i) for v in veth + [load("veth-end")]])
            for i in range(3)]
veth_udp = [veth_figure("udp", i) for i in range(4)]

rows = []  # (label, veth figure or None, [per run: its figure in each round])
def figures(f):
    return [[f(vals) for vals in per_round] for _, per_round in runs]
def row(label, veth, key, i=0):
    rows.append((label, veth, figures(lambda vals: num(vals.get(key, []), i))))

row("TCP up, delay 0 (Gbit/s)", veth_up, "tcp_up_1")
row("TCP down, delay 0 (Gbit/s)", veth_down, "tcp_down")
for i, name in enumerate(["min", "mean", "p99"]):
    rows.append((f"RTT added by delay 0, {name} (us)", veth_rtt[i],
                 figures(lambda vals, i=i: num(vals.get("rtt_1", []), i) - veth_rtt[i])))
for i, name in enumerate(["min", "mean"]):
    rows.append((f"RTT beyond 40 ms through delay 20, {name} (us)", veth_rtt[i],
                 figures(lambda vals, i=i: num(vals.get("rtt_40ms", []), i) - 40000)))
row("CPU, 10 Mbit/s bulk TCP via link 10mbit (% core)", None, "cpu_10mbit")
row("CPU, same with --spin 0 (% core)", None, "cpu_nospin")
row("lateness p99, same with --spin 0 (us)", None, "late_nospin", 1)
row("CPU, 100 Mbit/s bulk TCP via link 100mbit (% core)", None, "cpu_100mbit")
row("CPU, 1 Gbit/s bulk TCP via link 1gbit (% core)", None, "cpu_1gbit")
row("CPU, idle delay 0 shell (% core)", None, "cpu_idle")
row("UDP -b 0 -l 1472 received (Gbit/s)", veth_udp[0], "udp")
row("UDP datagrams sent", veth_udp[2], "udp", 2)
row("UDP loss seen by iperf3 (%)", veth_udp[1], "udp", 1)
row("UDP dropped by the receiver's full socket", veth_udp[3], "udp_receiver_drops")
rows.append(("UDP sent - read by emu (kernel drops)", None,
             figures(lambda vals: num(vals.get("udp", []), 2) - num(vals.get("udp_reads", []), 0))))
row("UDP kernel drops emu reports", None, "udp_reads", 1)
row("TCP --no-offload, delay 0 (Gbit/s)", veth_up, "tcp_nooffload")
row("TCP --no-offload via a 12 Gbit/s trace (Gbit/s)", veth_up, "tcp_trace12")
row("TCP via link 10gbit (Gbit/s)", None, "link_10gbit")
row("TCP via link 1gbit (Gbit/s)", None, "link_1gbit")
row("TCP via link 100mbit (Gbit/s)", None, "link_100mbit")
for rate in ["10mbit", "100mbit", "1gbit", "10gbit"]:
    row(f"lateness mean at link {rate} (us)", None, f"late_{rate}", 0)
    row(f"lateness p99 at link {rate} (us)", None, f"late_{rate}", 1)
for rate in ["10mbit", "100mbit"]:
    row(f"lateness p99 of the ACKs at link {rate} (us)", None, f"late_{rate}", 3)
row("lateness p99, UDP flood (us)", None, "late_udp", 1)
row("lateness p99, TCP --no-offload (us)", None, "late_nooffload", 1)
for d in [1, 2, 3]:
    row(f"{d} nested delay 0: TCP up (Gbit/s)", veth_up, f"tcp_up_{d}")
    rows.append((f"{d} nested delay 0: RTT added, mean (us)", veth_rtt[1],
                 figures(lambda vals, d=d: num(vals.get(f"rtt_{d}", []), 1) - veth_rtt[1])))
    row(f"{d} nested delay 0: CPU at full TCP (% core)", None, f"cpu_up_{d}")
    row(f"{d} nested delay 0: emu wake-ups per ping", None, f"wakes_{d}")

# Rows of groups left out (EMU_BENCH_ONLY) have no figure in any run.
rows = [r for r in rows if any(v == v for values in r[2] for v in values)]

def fmt(x):
    if x is None:
        return "-"
    if x != x:
        return "n/a"
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.0f}"
def fmt_p(p):
    return "n/a" if p != p else "<0.001" if p < 0.001 else f"{p:.3f}"
def spread(values):
    values = [v for v in values if v == v]
    return f"{fmt(min(values))}..{fmt(max(values))}" if values else "n/a"

def rank_p(before, after):
    """The p-value of an exact two-sided rank-sum test:
    had nothing changed, every way of sharing the pooled rounds between the
    two binaries would be as likely; p is the share of those ways whose
    rank sum for 'after' lies at least as far from its mean as the one
    measured. Ties share their mean rank."""
    before = [v for v in before if v == v]
    after = [v for v in after if v == v]
    if len(before) < 2 or len(after) < 2:
        return float("nan")
    pooled = before + after
    order = sorted(range(len(pooled)), key=pooled.__getitem__)
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    n, m = len(pooled), len(after)
    mean = m * (n + 1) / 2
    far = abs(sum(ranks[len(before):]) - mean) - 1e-9
    if comb(n, m) > 200_000:
        # Past 10 rounds a side: the normal approximation (no tie correction).
        sd = (m * (n - m) * (n + 1) / 12) ** 0.5
        return erfc(far / sd / 2 ** 0.5) if sd else 1.0
    splits = [sum(ranks[k] for k in chosen) for chosen in combinations(range(n), m)]
    return sum(abs(total - mean) >= far for total in splits) / len(splits)

compare = has_before and rounds > 1
head = ["", "veth"]
for name, _ in runs:
    head += [name] + ([f"{name} range"] if rounds > 1 else [])
if has_before:
    head.append("after/before")
if compare:
    head.append("p")
width = max(len(r[0]) for r in rows) + 2
if rounds > 1:
    print(f"Medians over {rounds} rounds; each range is the lowest..highest round.")
if compare:
    print("p: how likely, had nothing changed, after's rounds would rank at least this far from before's")
    print(f"(an exact rank test; {rounds} rounds cannot give less than {2 / comb(2 * rounds, rounds):.2g}). "
          "Among many rows some fall below 0.05 by chance:")
    print("it speaks for the row a change was made for, chosen before the run.")
widths = {"p": 8}
print(f"{head[0]:<{width}}" + "".join(f"{h:>{widths.get(h, 18 if h.endswith('range') else 14)}}" for h in head[1:]))
for label, veth_value, per_run in rows:
    line = f"{label:<{width}}{fmt(veth_value):>14}"
    for values in per_run:
        line += f"{fmt(middle(values)):>14}"
        if rounds > 1:
            line += f"{spread(values):>18}"
    if has_before:
        b, a = (middle(values) for values in per_run)
        ratio = a / b if b == b and a == a and b != 0 else float("nan")
        line += f"{fmt(ratio):>14}"
    if compare:
        line += f"{fmt_p(rank_p(*per_run)):>8}"
    print(line)

after = runs[-1][1]
def after_figure(key, i):
    return middle(num(vals.get(key, []), i) for vals in after)
timing = []
for rate in ["10mbit", "100mbit", "1gbit", "10gbit"]:
    p99 = after_figure(f"late_{rate}", 1)
    gbit = after_figure(f"link_{rate}", 0)
    timing.append((f"link {rate:<7} carrying {gbit:6.2f} Gbit/s", p99))
for rate in ["10mbit", "100mbit"]:
    timing.append((f"link {rate:<7} ACKs", after_figure(f"late_{rate}", 3)))
for key, what in [("late_udp", "UDP flood through delay 0"), ("late_nooffload", "TCP --no-offload through delay 0"),
                  ("late_trace12", "TCP --no-offload through a 12 Gbit/s trace")]:
    timing.append((what, after_figure(key, 1)))
timing = [(what, p99) for what, p99 in timing if p99 == p99]
if timing:
    print()
    print("Timing (lateness p99 <= 100 us" + (", medians over the rounds" if rounds > 1 else "") + "):")
    for what, p99 in timing:
        print(f"  {what}: p99 {fmt(p99)} us -> {'met' if p99 <= 100 else 'NOT met'}")
PY
