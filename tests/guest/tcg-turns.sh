#!/bin/sh
# tests/guest/tcg-turns.sh - the guest side of scripts/tcg-turns: a busy loop on every CPU
# under scx_mosaic (default flags) for MS milliseconds (/mosaic/tcg-turns, built by the host
# script); prints each CPU's turns lost and "@@turns_per_s@@ N". Fails on an ejection.
. "$(dirname "$0")/lib.sh"
start_mosaic --stats 0 >/dev/null || exit 1
/mosaic/tcg-turns "${1:-3000}" || { stop_mosaic; exit 1; }
[ "$(cat $SCX/state)" = enabled ] || { echo "ejected during the busy loops"; exit 1; }
stop_mosaic >/dev/null
