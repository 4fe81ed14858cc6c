# Cell "nice": CPU hogs and short sleepers whose nice values a loop keeps changing at random
# (-20..19, a weight ratio of up to ~6000:1); none may starve. Sourced by run.sh.
g_start || return 1
canaries
spin_bg sleepers -t $((2 * NCPU)) -s "$SECS" -b 1000 -z 4000
end=$(($(now) + SECS - 1)) n=0
while [ "$(now)" -lt $end ]; do
    set -- $(tids_of canary sleepers)
    i=0
    while [ $i -lt 4 ] && [ $# -gt 0 ]; do
        eval t=\${$((RANDOM % $# + 1))}
        renice $((RANDOM % 40 - 20)) -p "$t" >/dev/null 2>&1 && n=$((n + 1))
        i=$((i + 1))
    done
    sleep 0.1
done
r renices $n
spin_wait canary
spin_wait sleepers
g_stop
