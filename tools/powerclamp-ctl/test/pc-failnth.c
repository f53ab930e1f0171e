// SPDX-License-Identifier: GPL-2.0
/*
 * pc-failnth: fail one slab allocation of one operation and say whether
 * it was failed, for the guest's error-path check.
 *
 *   pc-failnth N write FILE VALUE     write VALUE to FILE
 *   pc-failnth N load MODULE.ko [PARAMS]   finit_module()
 *   pc-failnth N online CPU           write 1 to cpuCPU/online
 *   pc-failnth N kthread NAME write FILE VALUE
 *
 * Arms /proc/TID/fail-nth with N (the kernel then fails the Nth slab
 * allocation failslab sees from that task: CONFIG_FAILSLAB, and
 * ignore-gfp-wait off in debugfs for GFP_KERNEL), runs the operation and
 * prints one line:
 *
 *   result=0|-ERRNO injected=0|1 left=L
 *
 * where injected says whether the Nth allocation came (the counter reached
 * 0) and L is what remained of it otherwise. Files are opened before the
 * task is armed, so that only the operation's own allocations count.
 *
 * CPU hotplug callbacks run on the CPU's cpuhp/CPU thread, not in the
 * writer: "online" arms cpuhp/CPU, and "kthread NAME" arms the kernel
 * thread whose comm is NAME for a write (kthreadd creates every kernel
 * thread, the injection threads smpboot asks for included). Exits 0 when the
 * operation ran, 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		die(path);
	return fd;
}

/* the pid of the kernel thread whose comm is @name, or -1 */
static int find_kthread(const char *name)
{
	char path[300], comm[64];
	struct dirent *d;
	DIR *proc = opendir("/proc");
	int pid = -1;

	if (!proc)
		die("/proc");
	while (pid < 0 && (d = readdir(proc))) {
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			if (!strcmp(comm, name))
				pid = atoi(d->d_name);
		}
		fclose(f);
	}
	closedir(proc);
	return pid;
}

/* arm (@n > 0) or disarm (0) the task behind the open fail-nth @fd */
static bool set_fail_nth(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(fd, buf, len, 0) == len;
}

/* what is left of the count, 0 once the failure was injected; -1 */
static long get_fail_nth(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
		return -1;
	return strtol(buf, NULL, 10);
}

/* write @value to the open @fd as one write(); 0 or -errno */
static int write_value(int fd, const char *value)
{
	size_t len = strlen(value);
	ssize_t done = write(fd, value, len);

	if (done < 0)
		return -errno;
	return (size_t)done == len ? 0 : -EIO;	/* short: not a clean error */
}

static int usage(void)
{
	fprintf(stderr,
		"usage: pc-failnth N write FILE VALUE\n"
		"       pc-failnth N load MODULE.ko [PARAMS]\n"
		"       pc-failnth N online CPU\n"
		"       pc-failnth N kthread NAME write FILE VALUE\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *value = "1", *params = "";
	char path[96], name[32];
	int nth_fd, fd, ret, pid = -1;
	unsigned int n;
	bool load = false;
	long left;

	if (argc < 4)
		return usage();
	n = strtoul(argv[1], NULL, 10);
	if (!n)
		return usage();

	if (!strcmp(argv[2], "kthread") && argc == 7 && !strcmp(argv[4], "write")) {
		pid = find_kthread(argv[3]);
		fd = open_or_die(argv[5], O_WRONLY);
		value = argv[6];
	} else if (!strcmp(argv[2], "online") && argc == 4) {
		snprintf(name, sizeof(name), "cpuhp/%s", argv[3]);
		pid = find_kthread(name);
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%s/online", argv[3]);
		fd = open_or_die(path, O_WRONLY);
	} else if (!strcmp(argv[2], "write") && argc == 5) {
		fd = open_or_die(argv[3], O_WRONLY);
		value = argv[4];
	} else if (!strcmp(argv[2], "load") && (argc == 4 || argc == 5)) {
		fd = open_or_die(argv[3], O_RDONLY | O_CLOEXEC);
		if (argc == 5)
			params = argv[4];
		load = true;
	} else {
		return usage();
	}

	if (pid == -1 && (!strcmp(argv[2], "kthread") || !strcmp(argv[2], "online"))) {
		fprintf(stderr, "pc-failnth: no kernel thread %s\n",
			argv[2][0] == 'k' ? argv[3] : name);
		return 2;
	}
	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/fail-nth", pid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/fail-nth");
	nth_fd = open_or_die(path, O_RDWR);

	if (!set_fail_nth(nth_fd, n))
		die("arming fail-nth");
	if (load)
		ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	else
		ret = write_value(fd, value);
	/* disarm before anything can fail: an armed kthread fails at random */
	left = get_fail_nth(nth_fd);
	if (!set_fail_nth(nth_fd, 0))
		die("disarming fail-nth");
	if (left < 0)
		die("reading fail-nth");

	printf("result=%d injected=%d left=%ld\n", ret, left == 0, left);
	return 0;
}
