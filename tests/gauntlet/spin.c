/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spin - the gauntlet's progress probe: N threads that each count their own
 * loop iterations, so that starvation of any single thread shows.
 *
 *   spin [-t THREADS] [-s SECONDS] [-b BUSY_US] [-z SLEEP_US] [-k STACK_KB]
 *
 * Threads wait behind a gate until all exist (creation is then not slowed by
 * the ones already running), then all start at once and each loops: bump its
 * counter, burn BUSY_US of CPU (0: just the bump), sleep SLEEP_US (0: no
 * sleep, a pure CPU hog). The counters are read at the start and SECONDS
 * later; one line goes to stdout:
 *
 *   spin threads=N wanted=W create_s=C secs=S min=A max=B zero=Z total=T
 *
 * zero is the number of threads whose counter did not move in the window
 * (starved); threads < wanted means thread creation failed. Exit status 0 if
 * zero == 0 and every thread was created, else 1. The process exits without
 * joining (10k sleeping threads take long to join under emulation).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct slot {
	volatile unsigned long count;
	char pad[64 - sizeof(unsigned long)];
};

static struct slot *slots;
static long busy_us, sleep_us;
static pthread_rwlock_t gate = PTHREAD_RWLOCK_INITIALIZER;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	struct slot *me = arg;
	struct timespec nap = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };

	pthread_rwlock_rdlock(&gate);
	pthread_rwlock_unlock(&gate);
	for (;;) {
		me->count++;
		if (busy_us > 0) {
			double until = now_s() + busy_us / 1e6;

			while (now_s() < until)
				;
		}
		if (sleep_us > 0)
			nanosleep(&nap, NULL);
	}
	return NULL;
}

static long arg_num(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0) {
		fprintf(stderr, "spin: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long threads = 4, secs = 10, stack_kb = 64, n, i, zero = 0;
	unsigned long *before, d, min = ~0UL, max = 0, total = 0;
	pthread_attr_t attr;
	double t0, created_at;
	int opt, err = 0;

	while ((opt = getopt(argc, argv, "t:s:b:z:k:")) != -1) {
		switch (opt) {
		case 't': threads = arg_num(optarg, "thread count"); break;
		case 's': secs = arg_num(optarg, "seconds"); break;
		case 'b': busy_us = arg_num(optarg, "busy time"); break;
		case 'z': sleep_us = arg_num(optarg, "sleep time"); break;
		case 'k': stack_kb = arg_num(optarg, "stack size"); break;
		default:
			fprintf(stderr, "usage: spin [-t THREADS] [-s SECONDS] "
					"[-b BUSY_US] [-z SLEEP_US] [-k STACK_KB]\n");
			return 2;
		}
	}
	if (threads < 1)
		threads = 1;
	slots = calloc(threads, sizeof(*slots));
	before = calloc(threads, sizeof(*before));
	if (!slots || !before) {
		fprintf(stderr, "spin: out of memory\n");
		return 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack_kb * 1024);

	pthread_rwlock_wrlock(&gate);
	t0 = now_s();
	for (n = 0; n < threads; n++) {
		pthread_t tid;

		err = pthread_create(&tid, &attr, worker, &slots[n]);
		if (err) {
			fprintf(stderr, "spin: thread %ld: %s\n", n, strerror(err));
			break;
		}
	}
	created_at = now_s();
	for (i = 0; i < n; i++)
		before[i] = slots[i].count;
	pthread_rwlock_unlock(&gate);
	sleep(secs);
	for (i = 0; i < n; i++) {
		d = slots[i].count - before[i];
		if (d == 0)
			zero++;
		if (d < min)
			min = d;
		if (d > max)
			max = d;
		total += d;
	}
	if (n == 0)
		min = 0;
	printf("spin threads=%ld wanted=%ld create_s=%.2f secs=%ld min=%lu max=%lu zero=%ld total=%lu\n",
	       n, threads, created_at - t0, secs, min, max, zero, total);
	fflush(stdout);
	_exit(zero == 0 && n == threads ? 0 : 1);
}
