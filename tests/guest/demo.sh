#!/bin/sh
# tests/guest/demo.sh - what `make run` shows: hackbench under the kernel's default
# scheduler and under scx_mosaic (with its live stats), interleaved in one boot, medians.
#
# Usage: demo.sh [ROUNDS]
AB_LIVE=1 exec sh "$(dirname "$0")/ab.sh" "${1:-5}" "hackbench -g 4 -l 200" \
    "kernel default (EEVDF)=eevdf" "scx_mosaic=--bpf-stats"
