// SPDX-License-Identifier: GPL-2.0
/*
 * pc-spin: the benchmark's CPU-bound counting load.
 *
 *   pc-spin COUNTER_FILE       count work units into COUNTER_FILE, forever
 *   pc-spin -r COUNTER_FILE... print the sum of the counters
 *
 * A work unit is a fixed run of instructions, so units per wall-clock second
 * measure the CPU a load really got, whatever the guest's accounting says.
 * The counter lives in a shared mapping of the file so that the reader needs
 * no signal or pipe.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SPINS_PER_UNIT 1000

static int count_forever(const char *path)
{
	volatile uint64_t *units;
	int fd, i;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(*units))) {
		perror(path);
		return 1;
	}
	units = mmap(NULL, sizeof(*units), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (units == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (;;) {
		for (i = 0; i < SPINS_PER_UNIT; i++)
			__asm__ volatile("" ::: "memory");
		(*units)++;
	}
}

static int print_sum(int n, char **paths)
{
	uint64_t sum = 0, units;
	int fd, i;

	for (i = 0; i < n; i++) {
		fd = open(paths[i], O_RDONLY);
		if (fd < 0 || pread(fd, &units, sizeof(units), 0) != sizeof(units)) {
			perror(paths[i]);
			return 1;
		}
		close(fd);
		sum += units;
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "-r"))
		return print_sum(argc - 2, argv + 2);
	if (argc == 2 && argv[1][0] != '-')
		return count_forever(argv[1]);
	fprintf(stderr, "usage: pc-spin COUNTER_FILE | pc-spin -r COUNTER_FILE...\n");
	return 2;
}
