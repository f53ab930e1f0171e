// SPDX-License-Identifier: GPL-2.0
/*
 * pc-plant: a thermal plant model for testing powerclamp-ctl.
 *
 *   pc-plant OUT_FILE [AMBIENT GAIN TAU_S PERIOD_MS]
 *
 * A first-order lag from the guest's busy share to a "temperature":
 * every period it takes the busy share b of all online CPUs and moves T
 * toward AMBIENT + GAIN * b with time constant TAU_S (defaults 30, 60,
 * 3 s, 100 ms). T starts at the fully busy value and is written in
 * millidegrees, like a thermal zone's temp, by rename so that readers
 * never see a partial file. Runs until killed.
 *
 * b is one less the idle time of /proc/stat (idle and iowait) over the
 * wall time of the online CPUs, not the busy share of /proc/stat's ticks:
 * idle time is measured from the clock, busy time is counted in ticks,
 * and a virtual CPU that its host does not run misses ticks. With 4 vCPUs
 * on 2 host cores the ticks came to 70-93 % of wall time, and to 45-63 %
 * with a kernel build beside the guest: a tick-based b follows the host's
 * load as much as the clamp.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* idle and iowait of all CPUs (s), and how many CPUs /proc/stat lists */
static int read_cpu_idle(double *idle_s, int *cpus)
{
	unsigned long long idle, iowait;
	char line[512];
	FILE *f = fopen("/proc/stat", "r");
	int n = -1;

	if (!f)
		return -1;
	*cpus = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "cpu", 3))
			break;
		if (line[3] == ' ')
			n = sscanf(line, "cpu %*u %*u %*u %llu %llu",
				   &idle, &iowait);
		else
			++*cpus;
	}
	fclose(f);
	if (n != 2 || !*cpus)
		return -1;
	*idle_s = (double)(idle + iowait) / sysconf(_SC_CLK_TCK);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_temp(const char *path, double temp)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%.0f\n", temp * 1000);
	if (fclose(f))
		return -1;
	return rename(tmp, path);
}

int main(int argc, char **argv)
{
	double ambient = 30, gain = 60, tau = 3, period_ms = 100, temp, busy;
	double idle0, idle1, t0, t1;
	struct timespec ts;
	int cpus;

	if (argc != 2 && argc != 6) {
		fprintf(stderr, "usage: pc-plant OUT_FILE [AMBIENT GAIN TAU_S PERIOD_MS]\n");
		return 2;
	}
	if (argc == 6) {
		ambient = atof(argv[2]);
		gain = atof(argv[3]);
		tau = atof(argv[4]);
		period_ms = atof(argv[5]);
	}
	ts.tv_sec = (time_t)(period_ms / 1000);
	ts.tv_nsec = (long)(period_ms * 1e6) % 1000000000L;
	temp = ambient + gain;
	t0 = now_s();
	if (read_cpu_idle(&idle0, &cpus) || write_temp(argv[1], temp)) {
		perror("pc-plant");
		return 1;
	}
	for (;;) {
		nanosleep(&ts, NULL);
		t1 = now_s();
		if (read_cpu_idle(&idle1, &cpus))
			return 1;
		busy = 1 - (idle1 - idle0) / ((t1 - t0) * cpus);
		busy = busy < 0 ? 0 : busy > 1 ? 1 : busy;
		/* exact for a step input, and stable after a long stall */
		temp += (ambient + gain * busy - temp) * (1 - exp(-(t1 - t0) / tau));
		if (write_temp(argv[1], temp))
			return 1;
		idle0 = idle1;
		t0 = t1;
	}
}
