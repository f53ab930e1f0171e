/*
 * Unit tests of the emulated package's power and thermal model
 * (target/i386/tcg/sysemu/pkg-power.c in the patched QEMU source), built
 * on the host against that file by scripts/test-emulator.sh. Prints a
 * KTAP document; exits 1 when a case fails. The expected figures are
 * worked out here by hand from the parameters, not by the model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <stdio.h>
#include <string.h>
#include "tcg/pkg-power.h"

static int nr_case, nr_failed;

static void result(bool ok, const char *name)
{
	nr_case++;
	if (!ok)
		nr_failed++;
	printf("%s %d %s\n", ok ? "ok" : "not ok", nr_case, name);
}

static void expect_u64(const char *name, uint64_t got, uint64_t want)
{
	if (got != want)
		printf("# %s: got %#llx, want %#llx\n", name,
		       (unsigned long long)got, (unsigned long long)want);
	result(got == want, name);
}

static void expect_near(const char *name, double got, double want, double tol)
{
	bool ok = fabs(got - want) <= tol;

	if (!ok)
		printf("# %s: got %.9f, want %.9f +- %g\n", name, got, want, tol);
	result(ok, name);
}

/* The defaults of the -cpu properties (target/i386/cpu.c) */
static const PkgModelParams defaults = {
	.pc6_mw = 2000, .uncore_mw = 9000, .core_mw = 14000,
	.core_c6_mw = 200, .tdp_mw = 65000, .ambient_c = 35,
	.rth_mc_per_w = 600, .tau_ms = 4000, .tjmax_c = 100,
};

#define SEC 1000000000LL

static void test_units(void)
{
	/* power 1/8 W (3), energy 2^-14 J (14), time 2^-10 s (10) */
	expect_u64("MSR_RAPL_POWER_UNIT", pkg_rapl_power_unit(), 0xa0e03);
	/* 65 W in 1/8 W */
	expect_u64("MSR_PKG_POWER_INFO TDP", pkg_power_info(&defaults), 520);
	expect_u64("MSR_IA32_TEMPERATURE_TARGET", pkg_temperature_target(&defaults),
		   100 << 16);
}

static void test_energy(void)
{
	PkgPowerState s;

	/* four cores busy: 9 + 4 x 14 = 65 W, for 10 s */
	pkg_power_reset(&s, &defaults);
	pkg_power_advance(&s, &defaults, 4, 4, 10 * SEC);
	expect_near("busy package: 65 J in 1 s x 10", s.pkg_joules, 650, 1e-9);
	expect_u64("busy package: energy status in 2^-14 J",
		   pkg_energy_status(s.pkg_joules), 650 * 16384);
	expect_near("busy package: PP0 4 x 14 W", s.pp0_joules, 560, 1e-9);

	/* two of four cores busy: 9 + 2 x 14 + 2 x 0.2 W; PP0 28.4 W */
	pkg_power_reset(&s, &defaults);
	pkg_power_advance(&s, &defaults, 4, 2, SEC);
	expect_near("half busy: package 37.4 J", s.pkg_joules, 37.4, 1e-9);
	expect_near("half busy: PP0 28.4 J", s.pp0_joules, 28.4, 1e-9);

	/* package C6: 2 W, cores 4 x 0.2 W of it */
	pkg_power_reset(&s, &defaults);
	pkg_power_advance(&s, &defaults, 4, 0, SEC);
	expect_near("package C6: 2 J", s.pkg_joules, 2, 1e-9);
	expect_near("package C6: PP0 0.8 J", s.pp0_joules, 0.8, 1e-9);

	pkg_power_advance(&s, &defaults, 4, 4, 0);
	pkg_power_advance(&s, &defaults, 4, 4, -SEC);
	expect_near("no time, no energy", s.pkg_joules, 2, 1e-12);
}

static void test_wrap(void)
{
	double unit = 1.0 / 16384;

	expect_u64("energy status: last value before the wrap",
		   pkg_energy_status(4294967295.0 * unit), 0xffffffff);
	expect_u64("energy status: wraps at 2^32 units",
		   pkg_energy_status(4294967296.0 * unit), 0);
	expect_u64("energy status: 2^32 + 5 units reads 5",
		   pkg_energy_status(4294967301.0 * unit), 5);
	expect_u64("energy status: a part unit is not counted",
		   pkg_energy_status(2.5 * unit), 2);
}

static void test_split(void)
{
	PkgPowerState once, split;
	int i;

	pkg_power_reset(&once, &defaults);
	pkg_power_reset(&split, &defaults);
	pkg_power_advance(&once, &defaults, 4, 3, 10 * SEC);
	for (i = 0; i < 1000; i++)
		pkg_power_advance(&split, &defaults, 4, 3, 10 * SEC / 1000);
	expect_near("energy does not depend on how often it is read",
		    split.pkg_joules, once.pkg_joules, 1e-9);
	expect_near("temperature does not depend on how often it is read",
		    split.celsius, once.celsius, 1e-9);
}

static void test_temperature(void)
{
	PkgPowerState s;
	double rise;

	pkg_power_reset(&s, &defaults);
	expect_near("power-on at ambient", s.celsius, 35, 0);
	/* one time constant busy: 1 - 1/e of the way to 35 + 65 x 0.6 */
	pkg_power_advance(&s, &defaults, 4, 4, 4 * SEC);
	rise = 39 * (1 - exp(-1));
	expect_near("busy for tau: 63 % of the way to 74 C", s.celsius,
		    35 + rise, 1e-9);
	pkg_power_advance(&s, &defaults, 4, 4, 60 * SEC);
	expect_near("busy for long: settles at 74 C", s.celsius, 74, 1e-3);
	expect_u64("thermal status at 74 C: valid, 1 C, 26 below TjMax",
		   pkg_therm_status(&defaults, s.celsius) & 0xf87f0000,
		   1ULL << 31 | 1ULL << 27 | 26ULL << 16);
	pkg_power_advance(&s, &defaults, 4, 0, 60 * SEC);
	expect_near("idle for long: settles at 35 + 2 x 0.6 C", s.celsius, 36.2,
		    1e-3);
	expect_u64("thermal status above TjMax reads 0 below",
		   pkg_therm_status(&defaults, 120) >> 16 & 0x7f, 0);
}

/*
 * The power limit as firmware leaves it, worked out from the SDM's
 * fields: PL1 65 W = 520 eighths (0x208), enable bit 15, time window
 * 2^14 x 1.75 / 1024 s = 28 s (Y = 14 in bits 21:17, Z = 3 in 23:22);
 * PL2 81.25 W = 650 (0x28a), enabled, 2^1 x 1.25 / 1024 s (Y = 1, Z = 1).
 */
static void test_power_limit(void)
{
	PkgModelParams p = defaults;
	uint64_t v;

	expect_u64("power limit from reset: PL1 65 W over 28 s, PL2 81.25 W, unlocked",
		   pkg_power_limit_default(&p), 0x0042828a00dc8208ULL);
	p.tdp_mw = 4095000;
	v = pkg_power_limit_default(&p);
	expect_u64("power limit at the largest TDP: PL1 32760 units",
		   v & 0x7fff, 32760);
	expect_u64("power limit at the largest TDP: PL2 held at the field's 32767",
		   v >> 32 & 0x7fff, 0x7fff);
}

static void test_params(void)
{
	PkgModelParams p = defaults;
	uint32_t min = 0, max = 0;
	const char *bad;

	result(!pkg_params_check(&p, &min, &max), "defaults are in range");
	p.tjmax_c = 200;
	bad = pkg_params_check(&p, &min, &max);
	result(bad && !strcmp(bad, "pkg-tjmax") && max == 127,
	       "pkg-tjmax=200 refused by name, range up to 127");
	p = defaults;
	p.tau_ms = 0;
	bad = pkg_params_check(&p, &min, &max);
	result(bad && !strcmp(bad, "pkg-tau-ms"), "pkg-tau-ms=0 refused by name");
	p = defaults;
	p.tdp_mw = 5000000;
	bad = pkg_params_check(&p, &min, &max);
	result(bad && !strcmp(bad, "pkg-tdp-mw"),
	       "pkg-tdp-mw beyond 15 bits of 1/8 W refused by name");
}

int main(void)
{
	printf("KTAP version 1\n1..30\n");
	test_units();
	test_energy();
	test_wrap();
	test_split();
	test_temperature();
	test_power_limit();
	test_params();
	printf("# %d passed, %d failed, 0 skipped\n", nr_case - nr_failed,
	       nr_failed);
	if (nr_case != 30) {
		printf("not ok %d the plan said 30 cases, %d ran\n", nr_case + 1,
		       nr_case);
		return 1;
	}
	return nr_failed != 0;
}
