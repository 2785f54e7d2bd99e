#!/usr/bin/env bash
# A late answer caught by --trigger-above and --trace on this machine (root,
# 2 CPUs or more): the demo's responder has its answering thread pinned to
# CPU 1, and 2.5 s in a SCHED_FIFO busy loop holds CPU 1 for 30 ms. The
# README's excerpt came from this script. Note the two priorities: `timeout`
# must run above the loop it ends (60 over 50), or on the same CPU at the
# same SCHED_FIFO priority it never runs again to end it.
# Extra arguments go to the demo: `--trace-stop host` makes latprobe stop the
# trace when the flagged sample arrives (a bench with no trigger wire).
set -u
B=${B:-target/release}
OUT=${OUT:-/tmp/latprobe-late}
mkdir -p "$OUT"
"$B/latprobe" demo --duration 5s --interval 10ms --trigger-above 5ms --trace --trace-keep 10 \
    --responder "$B/latprobe-responder" -o "$OUT/run.json" --html "$OUT/run.html" "$@" > "$OUT/summary.txt" 2> "$OUT/err.txt" &
LPID=$!
sleep 1.0
RPID=$(pgrep -P $LPID -f latprobe-responder | head -1)
taskset -p -c 1 "$RPID" > /dev/null
sleep 1.5
chrt -f 60 taskset -c 1 timeout 0.03 chrt -f 50 sh -c 'while :; do :; done'
wait $LPID
echo "latprobe exit $?; summary in $OUT/summary.txt"
