// SPDX-License-Identifier: GPL-2.0
/*
 * rusage - run a command and write how often its tasks switched out and
 * moved: the voluntary (blocked) and involuntary (preempted) context switches
 * of all of its descendants that were waited for, as the kernel's rusage
 * counts them, and their migrations (the kernel's software event, inherited by
 * every task the command starts). Both are kept for every scheduling class.
 *
 * Usage: rusage OUTFILE COMMAND [ARG...]
 * Writes "VOLUNTARY INVOLUNTARY MIGRATIONS" to OUTFILE; exits with the
 * command's status.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A migration counter that the tasks this one starts inherit, or -1. */
static int inherited_migration_counter(void)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_MIGRATIONS;
	attr.inherit = 1;
	return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

int main(int argc, char **argv)
{
	uint64_t migrations;
	struct rusage ru;
	int status, fd;
	FILE *out;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: rusage OUTFILE COMMAND [ARG...]\n");
		return 2;
	}
	fd = inherited_migration_counter();
	if (fd < 0) {
		perror("rusage: perf_event_open(cpu-migrations)");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("rusage: fork");
		return 1;
	}
	if (!pid) {
		execvp(argv[2], argv + 2);
		perror("rusage: exec");
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || getrusage(RUSAGE_CHILDREN, &ru) ||
	    read(fd, &migrations, sizeof(migrations)) != sizeof(migrations)) {
		perror("rusage: wait");
		return 1;
	}
	out = fopen(argv[1], "w");
	if (!out ||
	    fprintf(out, "%ld %ld %llu\n", ru.ru_nvcsw, ru.ru_nivcsw,
		    (unsigned long long)migrations) < 0 ||
	    fclose(out)) {
		perror("rusage: write");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
