# Cell "nice": CPU hogs and short sleepers whose nice values a loop keeps changing at random
# (-20..19, a weight ratio of up to ~6000:1), 4 threads at a time, as fast as the loop goes;
# none may starve. Sourced by run.sh.
g_start || return 1
canaries
spin_bg sleepers -t $((2 * NCPU)) -s "$SECS" -b 1000 -z 4000
boost
wait_threads canary $((2 * NCPU))
wait_threads sleepers $((2 * NCPU))
set -- $(tids_of canary sleepers)
end=$(($(now) + SECS - 1)) n=0
while [ "$(now)" -lt $end ]; do
    # one renice a round: a random nice value for 4 random threads
    eval ts=\"\${$((RANDOM % $# + 1))} \${$((RANDOM % $# + 1))} \${$((RANDOM % $# + 1))} \${$((RANDOM % $# + 1))}\"
    # shellcheck disable=SC2086
    renice $((RANDOM % 40 - 20)) -p $ts >/dev/null 2>&1 && n=$((n + 4))
done
r renices $n
spin_wait canary
spin_wait sleepers
g_stop
