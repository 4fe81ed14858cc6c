# scripts/bench-names.sh - sourced (bash) by the study scripts that run the bench's workloads
# and schedulers outside mosaic-bench (tcg-vcpus, weight-split): the commands as
# `mosaic-bench list` gives them, so that each is written once. Needs the caller's die(), the
# built target/release/mosaic-bench, and the current directory at the repository's top.

bench_list=$(target/release/mosaic-bench list)
bench_peers=${MOSAIC_CACHE:-/var/cache/mosaic}/peers/bin

# "=COMMAND" for scenario or scheduler $1 as `mosaic-bench list` gives it ($2: scenarios or
# schedulers; COMMAND is empty for eevdf), or nothing if the list does not name it.
bench_command() {
    awk -v w="$1" -v part="$2" '/^scenarios/ { in_part = part == "scenarios"; next }
        /^schedulers/ { in_part = part == "schedulers"; next }
        in_part { n = $1; sub(/^\*/, "", n) }
        in_part && n == w { $1 = ""; sub(/^ +/, ""); print "=" $0; exit }' <<<"$bench_list"
}

# Scheduler $1 as `mosaic-bench list` names it: its command line in sched_cmd (empty: the
# kernel's default) and, for a binary other than scx_mosaic (a peer built by `make bench`, or
# the A/B baseline $MOSAIC_BASE_BIN), its --add for vm/run appended to the array adds.
bench_sched() {
    local cmd bin src
    cmd=$(bench_command "$1" schedulers)
    [[ -n $cmd ]] || die "unknown scheduler $1 (mosaic-bench list names them)"
    sched_cmd=${cmd#=}
    bin=${sched_cmd%% *}
    [[ -n $bin && $bin != scx_mosaic ]] || return 0
    if [[ $bin == scx_mosaic_base ]]; then
        src=${MOSAIC_BASE_BIN:-}
        [[ -n $src && -f $src ]] || die "$1 needs MOSAIC_BASE_BIN=<an scx_mosaic binary>"
    else
        src=$bench_peers/$bin
        [[ -x $src ]] || die "no $src (make bench builds the peers)"
    fi
    adds+=(--add "$src:/usr/bin/$bin")
}
