// SPDX-License-Identifier: GPL-2.0
/*
 * runon-pair - two threads that wake each other in turn through pipes, one of
 * which runs on after its wakeups: the shape of a server that answers a
 * client and goes on with other work (redis-server and redis-benchmark).
 *
 * The client writes a request and blocks on the answer; the server reads it,
 * writes the answer (a sync wakeup of the client), then computes for RUNON_US
 * before it blocks on the next request. The client computes for THINK_US
 * (longer) before it writes the next one, so that the server is asleep by
 * then and each request wakes it (a sync wakeup of the server by a waker that
 * sleeps at once).
 *
 * Usage: runon-pair ROUNDS RUNON_US THINK_US
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int req[2], resp[2];
static long rounds, runon_us, think_us;

/* Keep the CPU busy for @us microseconds of wall time. */
static void spin_us(long us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L +
		       (t.tv_nsec - t0.tv_nsec) / 1000 <
	       us);
}

/* Read or write one byte, or exit with a message. */
static void xfer(int fd, int out)
{
	char c = 0;

	if ((out ? write(fd, &c, 1) : read(fd, &c, 1)) != 1) {
		perror(out ? "write" : "read");
		exit(1);
	}
}

static void *server(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		xfer(req[0], 0);
		xfer(resp[1], 1);
		spin_us(runon_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t srv;

	if (argc != 4) {
		fprintf(stderr, "usage: runon-pair ROUNDS RUNON_US THINK_US\n");
		return 2;
	}
	rounds = atol(argv[1]);
	runon_us = atol(argv[2]);
	think_us = atol(argv[3]);
	if (pipe(req) || pipe(resp) ||
	    pthread_create(&srv, NULL, server, NULL)) {
		perror("runon-pair");
		return 1;
	}
	for (long i = 0; i < rounds; i++) {
		xfer(req[1], 1);
		xfer(resp[0], 0);
		spin_us(think_us);
	}
	pthread_join(srv, NULL);
	return 0;
}
