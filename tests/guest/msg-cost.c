// SPDX-License-Identifier: GPL-2.0
/*
 * msg-cost.c - what one message of the message programs costs its writer and
 * its reader: 100-byte writes into a unix stream socket (or a pipe), BATCH at
 * a time so that neither side ever blocks, then the reads that drain them, on
 * one CPU. scripts/msg-cost runs it on the host and in the VM; the simulator's
 * hackbench model (sim/src/workload.rs) splits a message's cost between its
 * writer and its reader by the host's ratio.
 *
 * Usage: msg-cost [socket|pipe] [ROUNDS]
 * Prints "@@msg_cost@@ MODE write_ns read_ns": the medians over ROUNDS batches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#define MSG_BYTES 100
/* under a socket's send buffer and a pipe's 64 KiB: no side blocks */
#define BATCH 200

static double ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "socket";
	int rounds = argc > 2 ? atoi(argv[2]) : 1000;
	char msg[MSG_BYTES];
	double *w, *r;
	int fd[2], i, k;

	if (rounds < 1 || (strcmp(mode, "socket") && strcmp(mode, "pipe"))) {
		fprintf(stderr, "usage: msg-cost [socket|pipe] [ROUNDS]\n");
		return 2;
	}
	if (!strcmp(mode, "pipe") ? pipe(fd)
				  : socketpair(AF_UNIX, SOCK_STREAM, 0, fd)) {
		perror("msg-cost");
		return 1;
	}
	w = calloc(rounds, sizeof(*w));
	r = calloc(rounds, sizeof(*r));
	if (!w || !r)
		return 1;
	memset(msg, 'm', sizeof(msg));
	for (i = 0; i < rounds; i++) {
		double t0 = ns_now(), t1, t2;

		for (k = 0; k < BATCH; k++)
			if (write(fd[1], msg, MSG_BYTES) != MSG_BYTES)
				return 1;
		t1 = ns_now();
		for (k = 0; k < BATCH; k++)
			if (read(fd[0], msg, MSG_BYTES) != MSG_BYTES)
				return 1;
		t2 = ns_now();
		w[i] = (t1 - t0) / BATCH;
		r[i] = (t2 - t1) / BATCH;
	}
	printf("@@msg_cost@@ %s %.0f %.0f\n", mode, median(w, rounds),
	       median(r, rounds));
	return 0;
}
