# Cell "affinity": stress-ng --aggressive with its affinity stressor (random CPU hopping),
# CPU hogs and context switches, while a loop keeps changing the CPU masks of the canary
# threads with taskset (single CPUs included). Sourced by run.sh.
g_start || return 1
canaries
stressng --affinity "$NCPU" --affinity-rand --cpu "$NCPU" --switch 1 --aggressive
end=$(($(now) + SECS - 1)) n=0
while [ "$(now)" -lt $end ]; do
    for t in $(tids_of canary); do
        taskset -p "$(rand_mask)" "$t" >/dev/null 2>&1 && n=$((n + 1))
    done
    sleep 0.2
done
r affinity_changes $n
stressng_wait
spin_wait canary
g_stop
