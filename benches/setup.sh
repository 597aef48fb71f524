#!/usr/bin/env bash
# Times how long emu takes to build and tear down what it emulates, with
# nothing to carry, and prints the median and 90th percentile per case:
#  - one shell: `emu delay 0 -- true`;
#  - a chain of three: `emu delay 0 -- link 10mbit -- loss 0 -- true`;
#  - a 10-host experiment (5 hosts a side, one 1-second flow): the wall
#    time of `emu run` less the flow's second, i.e. building the hosts,
#    the fabric and the flow's programs, and tearing them down.
# Each case runs RUNS times (the experiment a quarter as often, at least
# 3). Given several emu binaries, every case runs each of them in turn, so
# a before/after comparison is made in one sitting on one machine.
# On a shared machine, EMU_BENCH_LOCK=FILE makes it hold that lock
# exclusively while it measures (as benches/datapath.sh does).
# Needs root, iperf3, python3.
# Usage: sudo benches/setup.sh [RUNS] [EMU_BINARY...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
shift || true
if [ $# -eq 0 ]; then
  cargo build --release --quiet --bin emu
  set -- "${CARGO_TARGET_DIR:-$PWD/target}/release/emu"
fi
if [ -z "${EMU_BENCH_LOCKED:-}" ] && [ -n "${EMU_BENCH_LOCK:-}" ]; then
  exec env EMU_BENCH_LOCKED=1 flock -x "$EMU_BENCH_LOCK" "$0" "$runs" "$@"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
  printf '[run]\nname = "setup"\nduration = "1s"\n'
  for i in 1 2 3 4 5; do
    printf '[hosts.s%s]\nside = "left"\n[hosts.r%s]\nside = "right"\n' "$i" "$i"
  done
  printf '[bottleneck]\nrate = "100mbit"\nqueue = "droptail packets 100"\n'
  printf '[[flows]]\nfrom = "s1"\nto = "r1"\ncc = "cubic"\n'
} > "$work/ten-hosts.toml"

# time_runs RUNS SUBTRACT_S CMD...: median and p90 wall time in ms, less
# SUBTRACT_S seconds each; a run that fails stops the bench.
time_runs() {
  python3 - "$@" <<'PY'
import subprocess, sys, time
runs, subtract, command = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
times = []
for _ in range(runs):
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    times.append((time.monotonic() - start - subtract) * 1000)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(command), done.stderr.decode(errors="replace")))
times.sort()
p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
print("median %7.1f ms   p90 %7.1f ms   (%d runs)" % (times[len(times) // 2], p90, runs))
PY
}

experiment_runs=$(( runs / 4 > 3 ? runs / 4 : 3 ))
for case in shell chain experiment; do
  for emu in "$@"; do
    printf '%-11s %-40s ' "$case" "$emu"
    case $case in
      shell) time_runs "$runs" 0 "$emu" delay 0 -- true ;;
      chain) time_runs "$runs" 0 "$emu" delay 0 -- link 10mbit -- loss 0 -- true ;;
      experiment)
        time_runs "$experiment_runs" 1 "$emu" run "$work/ten-hosts.toml" --out "$work/out" ;;
    esac
  done
done
