// SPDX-License-Identifier: GPL-2.0
/*
 * harden-exec: run a command (as root) under the process restrictions that
 * packaging/scx_mosaic.service asks systemd for, applied here by hand since
 * the test VM has no systemd:
 *
 *   CapabilityBoundingSet=  every capability not named in --keep is dropped
 *                           from the bounding set (root then execs with
 *                           exactly the kept ones), the inheritable set
 *                           cleared;
 *   NoNewPrivileges=yes     PR_SET_NO_NEW_PRIVS;
 *   MemoryDenyWriteExecute= PR_SET_MDWE (REFUSE_EXEC_GAIN, Linux >= 6.3):
 *                           no mapping becomes writable and executable.
 *
 *   harden-exec --keep=sys_admin,bpf,... COMMAND [ARG...]
 *   harden-exec --keep=... --check   print "capbnd=<hex> mdwe=<errno>" (the
 *                                    bounding set, and mprotect(RWX)'s errno)
 *
 * Built static on the host (tests/vmtest.py guest_binary) and added to the
 * guest as /usr/bin/harden-exec.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

static const struct {
	const char *name;
	int cap;
} caps[] = {
	{"dac_override", CAP_DAC_OVERRIDE},
	{"net_admin", CAP_NET_ADMIN},
	{"ipc_lock", CAP_IPC_LOCK},
	{"sys_admin", CAP_SYS_ADMIN},
	{"sys_nice", CAP_SYS_NICE},
	{"sys_resource", CAP_SYS_RESOURCE},
	{"perfmon", 38},
	{"bpf", 39},
};

/* Bit mask of the capabilities named in the comma-separated @list. */
static unsigned long long parse_keep(char *list)
{
	unsigned long long keep = 0;
	char *name;
	size_t i;

	for (name = strtok(list, ","); name; name = strtok(NULL, ",")) {
		for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
			if (!strcmp(name, caps[i].name))
				break;
		if (i == sizeof(caps) / sizeof(caps[0])) {
			fprintf(stderr, "harden-exec: unknown capability %s\n",
				name);
			exit(2);
		}
		keep |= 1ULL << caps[i].cap;
	}
	return keep;
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int last = 40;

	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = 40;
		fclose(f);
	}
	return last;
}

static int restrict_self(unsigned long long keep)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap <= last_cap(); cap++)
		if (!(keep & (1ULL << cap)) &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			return -1;
	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[0].inheritable = data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data))
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0);
}

/* The bounding set as /proc/self/status shows it. */
static void print_check(void)
{
	char line[256], bnd[64] = "?";
	FILE *f = fopen("/proc/self/status", "r");
	void *p;
	int mdwe = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapBnd: %63s", bnd) == 1)
			break;
	if (f)
		fclose(f);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED &&
	    mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC))
		mdwe = errno;
	printf("capbnd=%s mdwe=%d\n", bnd, mdwe);
}

int main(int argc, char **argv)
{
	unsigned long long keep;

	if (argc < 3 || strncmp(argv[1], "--keep=", 7)) {
		fprintf(stderr, "usage: harden-exec --keep=CAP,... COMMAND "
				"[ARG...] | --check\n");
		return 2;
	}
	keep = parse_keep(argv[1] + 7);
	if (restrict_self(keep)) {
		perror("harden-exec");
		return 1;
	}
	if (!strcmp(argv[2], "--check")) {
		print_check();
		return 0;
	}
	execvp(argv[2], argv + 2);
	perror("harden-exec: exec");
	return 127;
}
