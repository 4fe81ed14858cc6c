# tests/test_steal.py: the overload gate's A/B under partial load - three request/response
# pairs (stress-ng's eventfd ping-pong: a parent and a child that wake each other without
# WF_SYNC, so each side keeps its own CPU, as the seed's netperf client and server did), at
# most one runnable task per CPU (the seed's case), with and without the gate of the shard
# design's cross-LLC steal, and under the default (per-CPU queues: the newidle balance's gate). perf pipe
# pairs would not do: a sync pair shares the waker's CPU (wakeup.bpf.c) and never idles.
. /mosaic/guest/lib.sh
pairs="stress-ng --eventfd 3 --eventfd-ops 15000 -q"
stats_under gate --shared-runq=shard "$pairs" || exit 1
stats_under nooverloadgate "--shared-runq=shard --no-overload-gate" "$pairs" || exit 1
stats_under default "" "$pairs" || exit 1
