# tests/test_steal.py: the overload gate's A/B under partial load - three perf pipe pairs,
# at most one runnable task per CPU (the seed's case), with and without the gate.
. /mosaic/guest/lib.sh
pairs="for i in 1 2 3; do perf bench sched pipe -T -l 5000 & done; wait"
stats_under gate "" "$pairs" || exit 1
stats_under nooverloadgate --no-overload-gate "$pairs" || exit 1
