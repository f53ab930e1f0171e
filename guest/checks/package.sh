# Guest checks: the emulated Intel package (QEMU with pkg-model=on,
# emulator/) judged by the MSRs themselves, read through /dev/cpu/N/msr,
# and the driver's real feedback path on it. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

MSR_PKG_C6=$((0x3f9))
MSR_CORE_C6=$((0x3fd))
# Residency within this many points of the target (the issue's figure)
TOL_PKG_C6=${TOL_PKG_C6:-1}

# msr_read CPU MSR: the MSR's value on CPU, in decimal
msr_read() {
	dd if="/dev/cpu/$1/msr" bs=8 count=1 skip="$2" iflag=skip_bytes status=none |
		od -An -tu8 | tr -d ' '
}

# The TSC's rate as the kernel calibrated it (TCG answers RDMSR of
# IA32_TSC with 0, as it does every MSR it does not model, so the TSC
# ticks of a window are its wall time at this rate)
tsc_mhz() {
	dmesg | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p
		s/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -n 1
}

# residency_window SECONDS: package C6 and, per CPU, core C6 residency over
# SECONDS in percent of the TSC, as "PKG CORE0 CORE1 ..."
residency_window() {
	local cpu t0 t1 p0 p1 c0=() c1=() out mhz
	mhz=$(tsc_mhz)
	t0=$(now_ns)
	p0=$(msr_read 0 "$MSR_PKG_C6")
	for ((cpu = 0; cpu < NCPU; cpu++)); do c0+=("$(msr_read "$cpu" "$MSR_CORE_C6")"); done
	sleep "$1"
	t1=$(now_ns)
	p1=$(msr_read 0 "$MSR_PKG_C6")
	for ((cpu = 0; cpu < NCPU; cpu++)); do c1+=("$(msr_read "$cpu" "$MSR_CORE_C6")"); done
	out=$(percent_of_tsc "$((p1 - p0))" "$((t1 - t0))" "$mhz")
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		out+=" $(percent_of_tsc "$((c1[cpu] - c0[cpu]))" "$((t1 - t0))" "$mhz")"
	done
	echo "$out"
}

# percent_of_tsc TICKS NS MHZ: TICKS as a percentage of the TSC ticks in NS
percent_of_tsc() {
	awk -v d="$1" -v ns="$2" -v mhz="$3" 'BEGIN {
		if (ns <= 0 || mhz <= 0) { print "none"; exit }
		printf "%.1f\n", 100 * d / (ns * mhz / 1000) }'
}

# The emulation on its own, module at target 0: an idle guest's package
# and cores sleep, a busy one's do not, and the TSC is invariant.
check_pkg_counters() {
	local r cpu
	grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo &&
		pass "invariant TSC: constant_tsc and nonstop_tsc" ||
		fail "invariant TSC: flags $(grep -m1 -o '[a-z_]*tsc[a-z_]*' /proc/cpuinfo | paste -sd' ')"
	[ -c /dev/cpu/0/msr ] || { fail "no /dev/cpu/0/msr (CONFIG_X86_MSR)"; return; }
	[ -n "$(tsc_mhz)" ] && pass "TSC rate calibrated ($(tsc_mhz) MHz)" ||
		fail "no TSC rate in the kernel log"
	sleep 1
	read -r -a r < <(residency_window 10)
	ktap_diag "idle guest: package C6 ${r[0]}%, core C6 ${r[*]:1} (% of TSC)"
	between "idle guest: package C6 residency (% of TSC)" "${r[0]}" 95 100.5
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		between "idle guest: CPU $cpu core C6 residency (% of TSC)" "${r[cpu + 1]}" 95 100.5
	done
	start_loads
	sleep 1
	read -r -a r < <(residency_window 10)
	stop_loads
	ktap_diag "busy loop on every CPU: package C6 ${r[0]}%, core C6 ${r[*]:1} (% of TSC)"
	between "busy guest: package C6 residency (% of TSC)" "${r[0]}" 0 1
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		between "busy guest: CPU $cpu core C6 residency (% of TSC)" "${r[cpu + 1]}" 0 1
	done
}

# The driver on the emulated package: it takes its feedback from the
# residency MSRs, and under full load the package sleeps for the target.
check_pkg_feedback() {
	local target r m
	expect "feedback source on the emulated package" "$(stat_field feedback_source)" pkg-cstate-msr
	start_loads
	for target in 10 25 40 50; do
		set_target "$target"
		sleep 3 # let the first windows and the calibration pass
		read -r -a r < <(residency_window 10)
		ktap_diag "target $target: package C6 ${r[0]}%, core C6 ${r[*]:1}, driver measured $(stat_field measured_ratio)%"
		ktap_diag "stats: $(paste -sd' ' "$DEBUG_DIR/stats")"
		within "target $target: package C6 residency vs target" "${r[0]}" "$target" "$TOL_PKG_C6"
	done
	set_target 0
	stop_loads
	m=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	((m > 0)) && pass "calibration learnt ($m ratios with confidence)" ||
		fail "calibration table untouched after clamping under load"
}
