#!/usr/bin/env bash
# Soak: one long TCP transfer at 1 Gbit/s through
#     emu --log DIR delay 10 -- link 1gbit --queue fq_codel
# and what a long run must keep flat:
#  - emu's RSS, sampled every 10 s (VmRSS of the emu process), with the
#    least-squares slope over the run (after the first minute's warm-up,
#    when rings and buffers fill to their working size);
#  - the delay shell's departure lateness (p50, p99, p99.9, max) per
#    window of 5 minutes, or of DURATION/12 when the run is shorter;
#  - the accounting at the end: read = delivered + dropped + queued for
#    every shell and direction, and the logs agree with the counters.
# Exits non-zero if the accounting does not balance.
#
# Needs root and iperf3. Usage:
#     sudo DURATION=3600 benches/soak.sh            # the release soak (1 h)
#     sudo DURATION=180 LOGDIR=/var/tmp/soak benches/soak.sh
# The logs grow at about 23 MB/s at 1 Gbit/s (some 80 GB for the hour).
# They are analysed while emu writes them, and the blocks already read are
# handed back to the file system (holes punched in the files), so the run
# needs room for a minute of logs, not the hour. KEEP_LOGS=1 keeps them
# whole (for `emu report`); then the script refuses to start when LOGDIR's
# disk has less room than the whole run needs, as a full disk would test
# the full-disk path instead (docs/guide.md, "When the disk fills").
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-3600}
window=$((duration / 12))
[ "$window" -gt 300 ] && window=300
[ "$window" -lt 1 ] && window=1
cargo build --release --quiet --bin emu
cargo build --release --quiet -p emu-core --example soak_windows
emu=$PWD/target/release/emu
windows=$PWD/target/release/examples/soak_windows
work=$(mktemp -d)
logdir=${LOGDIR:-$work/log}
rm -rf "$logdir"
mkdir -p "$logdir"
keep=${KEEP_LOGS:-0}
if [ "$keep" = 1 ]; then need_mb=$((duration * 25)); else need_mb=$((60 * 25)); fi
free_mb=$(df -Pm "$logdir" | awk 'NR == 2 {print $4}')
if [ "$free_mb" -lt "$need_mb" ]; then
    echo "soak: $logdir has ${free_mb} MB free, and the logs at 1 Gbit/s need about ${need_mb} MB;" >&2
    echo "soak: set LOGDIR to a directory on a larger disk, or a shorter DURATION" >&2
    rm -rf "$work"
    exit 1
fi
port=5302
iperf3 -s -p $port >/dev/null 2>&1 &
server=$!
trap 'kill $server ${follower:-} 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5

echo "## soak: ${duration}s at 1 Gbit/s, delay 10 -- link 1gbit --queue fq_codel, logs in $logdir"
"$emu" --log "$logdir" delay 10 -- link 1gbit --queue fq_codel -- \
    sh -c "iperf3 -c \$EMU_BASE -p $port -t $duration -J > $work/iperf.json" &
emu_pid=$!
# The lateness per window and the accounting, read from the logs as they
# are written (and freed behind the reader unless KEEP_LOGS=1).
follow="--follow $work/done"
[ "$keep" = 1 ] || follow="$follow --free"
"$windows" "$logdir" 10 "$window" $follow > "$work/windows" 2>&1 &
follower=$!
: > "$work/rss"
start=$(date +%s)
while kill -0 $emu_pid 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/$emu_pid/status 2>/dev/null || true)
    [ -n "$rss" ] && echo "$(($(date +%s) - start)) $rss" >> "$work/rss"
    # Sleep in short steps so the end of the run is not waited for.
    for _ in $(seq 20); do
        kill -0 $emu_pid 2>/dev/null || break
        sleep 0.5
    done
done
status=0
wait $emu_pid || status=$?
touch "$work/done"
echo "emu exited with status $status"
windows_status=0
wait $follower || windows_status=$?
python3 - "$work/iperf.json" <<'PY'
import json, sys
try:
    end = json.load(open(sys.argv[1]))["end"]
    print(f"iperf3 goodput {end['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s, "
          f"{end['sum_sent'].get('retransmits', 0)} retransmits")
except Exception as e:
    print(f"iperf3 gave no result: {e}")
PY

echo
echo "## emu RSS every 10 s (kB)"
awk '{printf "%6d s %8d kB\n", $1, $2}' "$work/rss" | awk 'NR % 6 == 1'
awk 'BEGIN {n = 0}
     $1 >= 60 {n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2; last = $2; if (n == 1) first = $2}
     END {
       if (n < 3) { print "too few samples after the first minute for a slope"; exit }
       slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
       printf "RSS after warm-up: %d kB -> %d kB over %d samples; slope %.2f kB/min (%.1f MB/h)\n",
              first, last, n, slope * 60, slope * 3600 / 1024
     }' "$work/rss"

echo
echo "log size: $(du -sh --apparent-size "$logdir" | cut -f1) written, $(du -sh "$logdir" | cut -f1) left on disk"
cat "$work/windows"
exit $windows_status
