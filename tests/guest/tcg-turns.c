// SPDX-License-Identifier: GPL-2.0
/*
 * tcg-turns: how QEMU's single TCG host thread shares out the vCPUs, seen
 * from inside the guest (scripts/tcg-turns; the simulator's engine/tcg.rs
 * models it). One busy loop per CPU, pinned, reads CLOCK_MONOTONIC without
 * pause: a gap between two reads longer than GAP_NS is time its vCPU was
 * off the host thread (or in an interrupt). Printed per CPU: the gaps of
 * at least 1 ms (another vCPU's turn: one per turn this vCPU lost), the
 * shorter ones, and the median run between two gaps; then the turns per
 * second of the whole machine (every CPU's long gaps over the run's time).
 *
 * Usage: tcg-turns MS
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GAP_NS 30000LL
#define LONG_GAP_NS 1000000LL
#define MAX_RUNS 65536

struct result {
	long long long_gaps, short_gaps, median_run_ns, ns;
};

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* Spin on @cpu for @ms, recording the gaps into @r. */
static void spin(int cpu, long long ms, struct result *r)
{
	static long long runs[MAX_RUNS];
	long long start, last, seg, end, t;
	int n = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		exit(1);
	start = last = seg = now_ns();
	end = start + ms * 1000000LL;
	do {
		t = now_ns();
		if (t - last > GAP_NS) {
			if (t - last >= LONG_GAP_NS)
				r->long_gaps++;
			else
				r->short_gaps++;
			if (n < MAX_RUNS)
				runs[n++] = last - seg;
			seg = t;
		}
		last = t;
	} while (t < end);
	qsort(runs, n, sizeof(runs[0]), cmp_ll);
	r->median_run_ns = n ? runs[n / 2] : 0;
	r->ns = last - start;
}

int main(int argc, char **argv)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), i;
	long long ms = argc > 1 ? atoll(argv[1]) : 3000, turns = 0, ns = 0;
	struct result *res;

	res = mmap(NULL, ncpu * sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED || ms <= 0) {
		fprintf(stderr, "usage: tcg-turns MS\n");
		return 2;
	}
	memset(res, 0, ncpu * sizeof(*res));
	for (i = 0; i < ncpu; i++) {
		if (fork() == 0) {
			spin(i, ms, &res[i]);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	for (i = 0; i < ncpu; i++) {
		printf("cpu %d: %lld turns lost, %lld short gaps, median run "
		       "%lld us\n",
		       i, res[i].long_gaps, res[i].short_gaps,
		       res[i].median_run_ns / 1000);
		turns += res[i].long_gaps;
		ns = res[i].ns > ns ? res[i].ns : ns;
	}
	printf("@@turns_per_s@@ %.1f\n", ns ? turns * 1e9 / ns : 0.0);
	return 0;
}
