// SPDX-License-Identifier: GPL-2.0
/*
 * pc-plant: a thermal plant model for testing powerclamp-ctl.
 *
 *   pc-plant OUT_FILE [AMBIENT GAIN TAU_S PERIOD_MS]
 *
 * A first-order lag from the guest's busy share to a "temperature":
 * every period it reads the busy share b of all CPUs from /proc/stat and
 * moves T toward AMBIENT + GAIN * b with time constant TAU_S (defaults 30,
 * 60, 3 s, 100 ms). T starts at the fully busy value and is written in
 * millidegrees, like a thermal zone's temp, by rename so that readers
 * never see a partial file. Runs until killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* busy and total jiffies of all CPUs; idle and iowait count as not busy */
static int read_cpu_ticks(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[8];
	FILE *f = fopen("/proc/stat", "r");
	int n, i;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return -1;
	for (*total = 0, i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];
	return 0;
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
	unsigned long long b0, t0, b1, t1;
	struct timespec ts;

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
	if (read_cpu_ticks(&b0, &t0) || write_temp(argv[1], temp)) {
		perror("pc-plant");
		return 1;
	}
	for (;;) {
		nanosleep(&ts, NULL);
		if (read_cpu_ticks(&b1, &t1))
			return 1;
		if (t1 > t0) {
			busy = (double)(b1 - b0) / (double)(t1 - t0);
			temp += (ambient + gain * busy - temp) * (period_ms / 1000 / tau);
			if (write_temp(argv[1], temp))
				return 1;
			b0 = b1;
			t0 = t1;
		}
	}
}
