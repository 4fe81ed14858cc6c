// SPDX-License-Identifier: GPL-2.0
/*
 * restrict-af: run a command the way systemd's RestrictAddressFamilies=AF_UNIX
 * (scx_loader's hardening) runs a service: socket(2) for any family but
 * AF_UNIX fails with EAFNOSUPPORT (a seccomp filter, no_new_privs set).
 *
 *   restrict-af COMMAND [ARG...]   run COMMAND under the filter
 *   restrict-af --check            print "inet=<errno> unix=<errno>" for a
 *                                  socket() of each family under the filter
 *
 * Built static on the host (tests/vmtest.py guest_binary) and added to the
 * guest as /usr/bin/restrict-af for tests/guest/service.sh.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Install the filter: socket(family != AF_UNIX) -> EAFNOSUPPORT. */
static int restrict_families(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO | (EAFNOSUPPORT & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* errno of socket(@family, SOCK_STREAM), 0 if it succeeded. */
static int socket_errno(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: restrict-af --check | COMMAND [ARG...]\n");
		return 2;
	}
	if (restrict_families()) {
		fprintf(stderr, "restrict-af: seccomp: %s\n", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[1], "--check")) {
		printf("inet=%d unix=%d\n", socket_errno(AF_INET),
		       socket_errno(AF_UNIX));
		return 0;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "restrict-af: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
