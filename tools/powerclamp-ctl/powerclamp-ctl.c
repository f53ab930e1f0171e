// SPDX-License-Identifier: GPL-2.0
/*
 * powerclamp-ctl: hold a temperature, a power or any measured quantity at a
 * set point by moving the idle target of the intel_powerclamp cooling
 * device, the user space control loop that the driver is meant to serve.
 *
 * Every period it reads a sensor file (a thermal zone's temp, a RAPL
 * energy_uj counter with --rate, or any file that yields a number), runs a
 * PI(D) controller on the error and writes the new target to cur_state.
 * The integral stops while the output is held at a limit or by the rate
 * limit in the direction of the error (anti-windup), so the loop recovers
 * as soon as the error changes sign. On exit the target goes back to 0
 * unless --keep is given.
 *
 * Exit status: 0 done, 1 runtime error (sensor, cooling device), 2 usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THERMAL_CLASS	"/sys/class/thermal"
#define CDEV_TYPE	"intel_powerclamp"

struct options {
	const char *sensor;
	const char *cdev;	/* cooling device directory, NULL: find it */
	double setpoint;
	double scale;		/* sensor value (or rate) multiplier */
	int rate;		/* control the counter's rate per second */
	double kp, ki, kd;	/* percent idle per unit, per unit*s, per unit/s */
	int min_target, max_target;	/* max_target < 0: the device's max_state */
	int max_step;		/* percent per period */
	long interval_ms;
	long count;		/* periods, 0: until a signal */
	int dry_run, keep, quiet;
};

struct pid_state {
	double integral;	/* percent */
	double last_value;
	int have_last;
	int output;		/* percent, as last written */
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("powerclamp-ctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

/* Read the first number in @path. Return 0, or an errno value. */
static int read_number(const char *path, double *value)
{
	char buf[64], *end;
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f)
		return errno;
	if (!fgets(buf, sizeof(buf), f)) {
		err = ferror(f) ? errno : ENODATA;
	} else {
		errno = 0;
		*value = strtod(buf, &end);
		if (end == buf || errno)
			err = EINVAL;
	}
	fclose(f);
	return err;
}

/* @path <- the cooling device's attribute @name */
static void cdev_attr(char path[PATH_MAX], const char *cdev, const char *name)
{
	if (snprintf(path, PATH_MAX, "%s/%s", cdev, name) >= PATH_MAX)
		die(2, "cooling device path too long: %s", cdev);
}

static int write_target(const char *cdev, int target)
{
	char path[PATH_MAX];
	FILE *f;
	int err = 0;

	cdev_attr(path, cdev, "cur_state");
	f = fopen(path, "w");
	if (!f)
		return errno;
	if (fprintf(f, "%d\n", target) < 0)
		err = errno;
	if (fclose(f) && !err)
		err = errno;
	return err;
}

/* The cooling device directory of type intel_powerclamp, or NULL. */
static char *find_cooling_device(void)
{
	static char found[PATH_MAX];
	char path[PATH_MAX], type[64];
	struct dirent *d;
	DIR *dir = opendir(THERMAL_CLASS);
	FILE *f;

	if (!dir)
		return NULL;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "cooling_device", 14))
			continue;
		snprintf(path, sizeof(path), THERMAL_CLASS "/%s/type", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(type, sizeof(type), f) &&
		    !strncmp(type, CDEV_TYPE "\n", sizeof(CDEV_TYPE))) {
			snprintf(found, sizeof(found), THERMAL_CLASS "/%s", d->d_name);
			fclose(f);
			closedir(dir);
			return found;
		}
		fclose(f);
	}
	closedir(dir);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * One controller step on @value, @dt seconds after the previous one.
 * Positive error (too hot, too much power) asks for more idle. The
 * derivative acts on the measurement, so a new set point gives no kick.
 */
static int pid_step(struct pid_state *s, const struct options *o,
		    double value, double dt, double *error_out)
{
	double error = value - o->setpoint;
	double deriv = s->have_last ? (value - s->last_value) / dt : 0;
	double integral = s->integral + o->ki * error * dt;
	double lo = fmax(o->min_target, s->output - o->max_step);
	double hi = fmin(o->max_target, s->output + o->max_step);
	double wanted = o->kp * error + integral + o->kd * deriv;
	int held_up = wanted > hi && error > 0;
	int held_down = wanted < lo && error < 0;

	if (!held_up && !held_down)
		s->integral = clampd(integral, o->min_target, o->max_target);
	s->last_value = value;
	s->have_last = 1;
	s->output = (int)lround(clampd(wanted, lo, hi));
	*error_out = error;
	return s->output;
}

static void usage(FILE *out)
{
	fputs("Usage: powerclamp-ctl --sensor FILE --setpoint VALUE [options]\n"
	      "Hold VALUE, read from FILE, by moving the intel_powerclamp idle target.\n\n"
	      "  -s, --sensor FILE         file holding a number (thermal zone temp,\n"
	      "                            RAPL energy_uj, ...)\n"
	      "  -p, --setpoint VALUE      value to hold, in the scaled unit\n"
	      "  -r, --rate                the sensor is a counter: control its rate\n"
	      "                            per second (energy_uj gives microwatts)\n"
	      "  -S, --scale FACTOR        multiply readings (or rates) by FACTOR,\n"
	      "                            e.g. 0.001 for millidegrees (default 1)\n"
	      "  -c, --cooling-device DIR  default: the cooling device of type\n"
	      "                            " CDEV_TYPE "\n"
	      "  -i, --interval MS         control period, 10..60000 (default 1000)\n"
	      "      --kp GAIN             idle % per unit of error (default 1)\n"
	      "      --ki GAIN             idle % per unit of error and second (default 0.5)\n"
	      "      --kd GAIN             idle % per unit per second of change (default 0)\n"
	      "      --min PCT             lowest target (default 0)\n"
	      "      --max PCT             highest target (default: max_state)\n"
	      "      --max-step PCT        largest change per period (default 5)\n"
	      "  -n, --count N             stop after N periods (default: at SIGINT/SIGTERM)\n"
	      "      --dry-run             print the targets, never write cur_state\n"
	      "  -k, --keep                leave the last target in place on exit\n"
	      "  -q, --quiet               no line per period\n"
	      "  -h, --help\n", out);
}

static double parse_double(const char *opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v))
		die(2, "%s: '%s' is not a number", opt, arg);
	return v;
}

static long parse_long(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < min || v > max)
		die(2, "%s: '%s' is not an integer in %ld..%ld", opt, arg, min, max);
	return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_KP = 256, OPT_KI, OPT_KD, OPT_MIN, OPT_MAX, OPT_STEP, OPT_DRY };
	static const struct option longopts[] = {
		{ "sensor", required_argument, NULL, 's' },
		{ "setpoint", required_argument, NULL, 'p' },
		{ "rate", no_argument, NULL, 'r' },
		{ "scale", required_argument, NULL, 'S' },
		{ "cooling-device", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, 'i' },
		{ "kp", required_argument, NULL, OPT_KP },
		{ "ki", required_argument, NULL, OPT_KI },
		{ "kd", required_argument, NULL, OPT_KD },
		{ "min", required_argument, NULL, OPT_MIN },
		{ "max", required_argument, NULL, OPT_MAX },
		{ "max-step", required_argument, NULL, OPT_STEP },
		{ "count", required_argument, NULL, 'n' },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "keep", no_argument, NULL, 'k' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, have_setpoint = 0;

	*o = (struct options){ .scale = 1, .kp = 1, .ki = 0.5, .max_target = -1,
			       .max_step = 5, .interval_ms = 1000 };
	while ((c = getopt_long(argc, argv, "s:p:rS:c:i:n:kqh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->sensor = optarg; break;
		case 'p': o->setpoint = parse_double("--setpoint", optarg); have_setpoint = 1; break;
		case 'r': o->rate = 1; break;
		case 'S': o->scale = parse_double("--scale", optarg); break;
		case 'c': o->cdev = optarg; break;
		case 'i': o->interval_ms = parse_long("--interval", optarg, 10, 60000); break;
		case OPT_KP: o->kp = parse_double("--kp", optarg); break;
		case OPT_KI: o->ki = parse_double("--ki", optarg); break;
		case OPT_KD: o->kd = parse_double("--kd", optarg); break;
		case OPT_MIN: o->min_target = parse_long("--min", optarg, 0, 100); break;
		case OPT_MAX: o->max_target = parse_long("--max", optarg, 0, 100); break;
		case OPT_STEP: o->max_step = parse_long("--max-step", optarg, 1, 100); break;
		case 'n': o->count = parse_long("--count", optarg, 1, LONG_MAX); break;
		case OPT_DRY: o->dry_run = 1; break;
		case 'k': o->keep = 1; break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		die(2, "unexpected argument '%s' (see --help)", argv[optind]);
	if (!o->sensor || !have_setpoint)
		die(2, "--sensor and --setpoint are required (see --help)");
	if (o->kp < 0 || o->ki < 0 || o->kd < 0)
		die(2, "gains must not be negative");
}

/* Check the cooling device and settle the target range. */
static void open_cooling_device(struct options *o)
{
	char path[PATH_MAX];
	double max_state;
	int err;

	if (!o->cdev)
		o->cdev = find_cooling_device();
	if (!o->cdev)
		die(1, "no cooling device of type " CDEV_TYPE " in " THERMAL_CLASS
		    " (is the intel_powerclamp module loaded?)");
	cdev_attr(path, o->cdev, "max_state");
	err = read_number(path, &max_state);
	if (err)
		die(1, "cooling device %s: cannot read %s: %s", o->cdev, path, strerror(err));
	if (o->max_target < 0 || o->max_target > max_state)
		o->max_target = (int)max_state;
	if (o->min_target > o->max_target)
		die(2, "--min %d is above the highest target %d", o->min_target, o->max_target);
}

/*
 * The controlled value: the scaled reading, or with --rate the scaled
 * increase per second since the last reading. Return 0 when there is no
 * value yet (first counter reading, counter wrapped).
 */
static int sample(const struct options *o, double *last_raw, double *last_t,
		  double *value)
{
	double raw, t = now_s();
	int err = read_number(o->sensor, &raw), ok = 1;

	if (err)
		die(1, "cannot read sensor %s: %s", o->sensor, strerror(err));
	if (o->rate) {
		ok = *last_t > 0 && raw >= *last_raw && t > *last_t;
		if (ok)
			*value = (raw - *last_raw) / (t - *last_t) * o->scale;
		*last_raw = raw;
		*last_t = t;
	} else {
		*value = raw * o->scale;
	}
	return ok;
}

static void sleep_until(struct timespec *next, long interval_ms)
{
	next->tv_nsec += interval_ms % 1000 * 1000000L;
	next->tv_sec += interval_ms / 1000 + next->tv_nsec / 1000000000L;
	next->tv_nsec %= 1000000000L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR &&
	       !stop_requested)
		;
}

static void apply(const struct options *o, int target)
{
	int err;

	if (o->dry_run)
		return;
	err = write_target(o->cdev, target);
	if (err)
		die(1, "cannot write %d to %s/cur_state: %s", target, o->cdev, strerror(err));
}

int main(int argc, char **argv)
{
	struct pid_state pid = { 0 };
	struct options o;
	struct timespec next;
	double start, last_raw = 0, last_t = 0, prev_t = 0, value, error, t;
	long period;
	int target, written = -1, err;

	parse_options(argc, argv, &o);
	open_cooling_device(&o);
	err = read_number(o.sensor, &value);
	if (err)
		die(1, "cannot read sensor %s: %s", o.sensor, strerror(err));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	pid.output = o.min_target;

	if (!o.quiet)
		printf("# %s%s: hold %s at %g, gains %g/%g/%g, target %d..%d, step %d\n",
		       o.cdev, o.dry_run ? " (dry run)" : "", o.sensor, o.setpoint,
		       o.kp, o.ki, o.kd, o.min_target, o.max_target, o.max_step);
	start = now_s();
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (period = 0; !stop_requested && (!o.count || period < o.count); period++) {
		if (sample(&o, &last_raw, &last_t, &value)) {
			t = now_s();
			target = pid_step(&pid, &o, value,
					  prev_t ? t - prev_t : o.interval_ms / 1e3, &error);
			prev_t = t;
			if (target != written) {
				apply(&o, target);
				written = target;
			}
			if (!o.quiet)
				printf("t=%.2f value=%.3f error=%.3f integral=%.2f target=%d\n",
				       t - start, value, error, pid.integral, target);
			fflush(stdout);
		}
		sleep_until(&next, o.interval_ms);
	}
	if (!o.keep && written > 0)
		apply(&o, 0);
	return 0;
}
