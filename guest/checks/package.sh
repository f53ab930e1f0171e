# Guest checks: the emulated Intel package (QEMU with pkg-model=on,
# emulator/) judged by the MSRs themselves, read through /dev/cpu/N/msr,
# and the driver's real feedback path on it. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

MSR_PKG_C6=$((0x3f9))
MSR_CORE_C6=$((0x3fd))
# Residency within this many points of the target. The calibration
# compensates in per mille: in whole percents one percent more injection
# moved the residency by up to 1.5 points (at 40: 38.0 % with no
# compensation, 41.3 % with 2), docs/notes.md. The goal is 1 point; over
# eight full runs the largest error was 1.1 (51.1 % at 50, 2026-12-06),
# so the band is 1.5 until the scatter at 50 is understood.
TOL_PKG_C6=${TOL_PKG_C6:-1.5}

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

# is_number VALUE: VALUE is a decimal number (between/within read anything
# else as 0, which would pass a "below 1" band)
is_number() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }

# The model's parameters, as target/i386/cpu.c in the emulator defaults
# them (the package boot overrides none): milliwatts, degrees C, C/W, s.
PKG_PC6_MW=2000
PKG_UNCORE_MW=9000
PKG_CORE_MW=14000
PKG_CORE_C6_MW=200
PKG_AMBIENT_C=35
PKG_RTH_C_PER_W=0.6
PKG_TAU_S=4
PKG_TJMAX_C=100

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
	is_number "${r[0]}" || { fail "residency window gave no figures: ${r[*]}"; return; }
	# 95.1-96.5 % in five CI runs (the package, cores a little more): an
	# idle vCPU under TCG is awake for every wakeup's slow emulation, and
	# pkg_sockets read one at 85.4 % on a busier host. A model that did
	# not count, or counted the wrong state, reads near 0.
	between "idle guest: package C6 residency (% of TSC)" "${r[0]}" 85 100.5
	for ((cpu = 0; cpu < NCPU; cpu++)); do
		between "idle guest: CPU $cpu core C6 residency (% of TSC)" "${r[cpu + 1]}" 85 100.5
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
# The calibration compensates a target only once it and both neighbours
# are confident (the seed's design, for a target that thermald moves), so
# each target is approached through its neighbours, as such a client
# would; max_idle is raised so that 50 has a neighbour above it.
check_pkg_feedback() {
	local target r n
	expect "feedback source on the emulated package" "$(stat_field feedback_source)" pkg-cstate-msr
	echo 60 >"$PARAMS/max_idle"
	expect "max_idle raised for the neighbours of 50" "$(cat "$PARAMS/max_idle")" 60
	start_loads
	for target in 10 25 40 50; do
		for n in $((target - 1)) $((target + 1)) "$target"; do
			set_target "$n"
			sleep 2 # a few windows learn each ratio
		done
		sleep 2
		read -r -a r < <(residency_window 10)
		ktap_diag "target $target: package C6 ${r[0]}%, core C6 ${r[*]:1}, driver measured $(stat_field measured_ratio)%, compensation $(stat_field compensation)"
		ktap_diag "stats: $(paste -sd' ' "$DEBUG_DIR/stats")"
		within "target $target: package C6 residency vs target" "${r[0]}" "$target" "$TOL_PKG_C6"
	done
	set_target 0
	stop_loads
	expect "feedback source still the MSRs after clamping" "$(stat_field feedback_source)" pkg-cstate-msr
	m=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	((m > 0)) && pass "calibration learnt ($m ratios with confidence)" ||
		fail "calibration table untouched after clamping under load"
}

# turbostat_pc6 SECONDS [loads]: turbostat's summary Pkg%pc6 over SECONDS
# (turbostat reads the MSRs and the TSC itself; it shows Pkg%pc6 only when
# MSR_PKG_CST_CONFIG_CONTROL allows PC6, as on hardware)
turbostat_pc6() {
	turbostat --quiet --Summary --show Pkg%pc6 --interval "$1" \
		--num_iterations 1 2>/tmp/turbostat.err | awk '
		$1 == "Pkg%pc6" { col = 1; next }
		col && $1 ~ /^[0-9.]+$/ { v = $1 }
		END { if (v != "") print v }'
}

# turbostat, which we did not write, sees the package sleep when the
# guest is idle and stay awake when every CPU is busy.
check_pkg_turbostat() {
	local pc6
	command -v turbostat >/dev/null || { fail "no turbostat in the guest (linux-cpupower)"; return; }
	sleep 1
	pc6=$(turbostat_pc6 10)
	if ! is_number "$pc6"; then
		fail "turbostat gave no Pkg%pc6: $(tr '\n' ' ' </tmp/turbostat.err | cut -c1-300)"
		return
	fi
	ktap_diag "turbostat, idle guest: Pkg%pc6 $pc6"
	between "turbostat: idle guest's Pkg%pc6" "$pc6" 95 100
	start_loads
	sleep 1
	pc6=$(turbostat_pc6 10)
	stop_loads
	ktap_diag "turbostat, busy loop on every CPU: Pkg%pc6 $pc6"
	is_number "$pc6" && between "turbostat: busy guest's Pkg%pc6" "$pc6" 0 1 ||
		fail "turbostat gave no Pkg%pc6 under load"
}

# rapl_zone NAME: the powercap folder of the intel-rapl zone called NAME
rapl_zone() {
	local z
	for z in /sys/class/powercap/intel-rapl:*; do
		[ "$(cat "$z/name" 2>/dev/null)" = "$1" ] && { echo "$z"; return; }
	done
}

# energy_window SECONDS: over SECONDS, the package's and the cores'
# energy as intel_rapl reports it (uJ), the wall time (ns), and the MSR
# residencies in TSC ticks: "PKG_UJ PP0_UJ NS MHZ PKG_C6 CORE0_C6 ..."
energy_window() {
	local pkg pp0 cpu t0 t1 e0 e1 q0 q1 p0 p1 c0=() c1=() out
	pkg=$(rapl_zone package-0)
	pp0=$(rapl_zone core)
	# the energy is read before and after the MSRs, and the two averaged,
	# so that both windows are centred on the same moments
	e0=$(cat "$pkg/energy_uj") q0=$(cat "$pp0/energy_uj") t0=$(now_ns)
	p0=$(msr_read 0 "$MSR_PKG_C6")
	for ((cpu = 0; cpu < NCPU; cpu++)); do c0+=("$(msr_read "$cpu" "$MSR_CORE_C6")"); done
	e0=$((e0 + $(cat "$pkg/energy_uj"))) q0=$((q0 + $(cat "$pp0/energy_uj"))) t0=$((t0 + $(now_ns)))
	sleep "$1"
	e1=$(cat "$pkg/energy_uj") q1=$(cat "$pp0/energy_uj") t1=$(now_ns)
	p1=$(msr_read 0 "$MSR_PKG_C6")
	for ((cpu = 0; cpu < NCPU; cpu++)); do c1+=("$(msr_read "$cpu" "$MSR_CORE_C6")"); done
	e1=$((e1 + $(cat "$pkg/energy_uj"))) q1=$((q1 + $(cat "$pp0/energy_uj"))) t1=$((t1 + $(now_ns)))
	out="$(((e1 - e0) / 2)) $(((q1 - q0) / 2)) $(((t1 - t0) / 2)) $(tsc_mhz) $((p1 - p0))"
	for ((cpu = 0; cpu < NCPU; cpu++)); do out+=" $((c1[cpu] - c0[cpu]))"; done
	echo "$out"
}

# modelled_watts PKG|PP0 NS MHZ PKG_C6 CORE_C6...: the mean power the model
# must have drawn over a window with these residencies. In package C6 the
# package draws PC6 power; otherwise the uncore's, and each core its
# active power outside its C6 residency and its C6 power inside (less the
# part of it inside package C6, already in the PC6 figure).
modelled_watts() {
	local what=$1 ns=$2 mhz=$3 pc6=$4
	shift 4
	awk -v what="$what" -v ns="$ns" -v mhz="$mhz" -v pc6="$pc6" \
		-v p_pc6="$PKG_PC6_MW" -v p_unc="$PKG_UNCORE_MW" \
		-v p_core="$PKG_CORE_MW" -v p_c6="$PKG_CORE_C6_MW" -v cores="$*" 'BEGIN {
		t = ns / 1e9; tpc6 = pc6 / (mhz * 1e6)
		n = split(cores, c, " ")
		e = (what == "PKG") ? p_pc6 * tpc6 + p_unc * (t - tpc6) : 0
		for (i = 1; i <= n; i++) {
			tc6 = c[i] / (mhz * 1e6)
			if (what == "PKG")
				e += p_core * (t - tc6) + p_c6 * (tc6 - tpc6)
			else
				e += p_core * (t - tc6) + p_c6 * tc6
		}
		printf "%.3f\n", e / t / 1000 }'
}

# rapl_judge LABEL WINDOW PKG_PCT: the package power intel_rapl reports
# within PKG_PCT % of what the model draws for the residencies of the
# window, the cores' (PP0) within 5 %: an idle guest's PP0 read 4.6 %
# (0.06 W) above the model once, unexplained yet (docs/notes.md)
rapl_judge() {
	local label=$1 w got want pct
	read -r -a w <<<"$2"
	for what in PKG PP0; do
		if [ "$what" = PKG ]; then got=${w[0]} pct=$3; else got=${w[1]} pct=5; fi
		got=$(awk -v uj="$got" -v ns="${w[2]}" 'BEGIN { printf "%.3f\n", uj * 1000 / ns }')
		want=$(modelled_watts "$what" "${w[2]}" "${w[3]}" "${w[@]:4}")
		ktap_diag "$label: intel_rapl $what ${got} W, modelled ${want} W"
		within "$label: intel_rapl $what power vs the model (W, $pct %)" "$got" "$want" \
			"$(awk -v w="$want" -v p="$pct" 'BEGIN { printf "%.3f\n", w * p / 100 }')"
	done
}

# The kernel's intel_rapl finds the package and core domains, and their
# energy advances at the modelled power, idle and under load.
check_pkg_rapl() {
	local pkg w max
	pkg=$(rapl_zone package-0)
	[ -n "$pkg" ] && pass "intel_rapl: package-0 zone at $pkg" ||
		{ fail "intel_rapl: no package-0 zone in /sys/class/powercap ($(echo /sys/class/powercap/*))"; return; }
	[ -n "$(rapl_zone core)" ] && pass "intel_rapl: core (PP0) zone" ||
		{ fail "intel_rapl: no core zone"; return; }
	# The power limits as firmware leaves them, before anything wrote
	# them (pkg_thermald and pkg_msr_writes come later): PL1 at the TDP
	# (PKG_POWER_INFO, the long-term constraint's max_power) over 28 s,
	# PL2 at 1.25 times it, enabled. Without them intel_rapl reads 0.
	max=$(cat "$pkg/constraint_0_max_power_uw")
	expect "intel_rapl: long-term limit (PL1) at the TDP (uW)" \
		"$(cat "$pkg/constraint_0_power_limit_uw")" "$max"
	between "intel_rapl: long-term time window (us)" \
		"$(cat "$pkg/constraint_0_time_window_us")" 27900000 28100000
	expect "intel_rapl: short-term limit (PL2) at 1.25 times the TDP (uW)" \
		"$(cat "$pkg/constraint_1_power_limit_uw")" "$((max * 5 / 4))"
	expect "intel_rapl: package limit enabled" "$(cat "$pkg/enabled")" 1
	sleep 1
	w=$(energy_window 20) # idle power is small: a longer window
	# Idle, the package read 0.3-1.5 % from the model, then 2.2 % (3.109
	# W against 3.043) in one CI run: the check's own reads wake the
	# package, and at 3 W that weighs. A package that never reached PC6
	# in the energy model would read several watts more.
	rapl_judge "idle guest" "$w" 3
	start_loads
	sleep 1
	w=$(energy_window 10)
	stop_loads
	rapl_judge "busy loop on every CPU" "$w" 2
}

# thermal_zone TYPE: the thermal zone folder of that type
thermal_zone() {
	local z
	for z in /sys/class/thermal/thermal_zone*; do
		[ "$(cat "$z/type" 2>/dev/null)" = "$1" ] && { echo "$z"; return; }
	done
}

# celsius_of MILLIDEGREES
celsius_of() { awk -v m="$1" 'BEGIN { printf "%.1f\n", m / 1000 }'; }

# settled_after C0 WATTS SECONDS: the model's temperature SECONDS after it
# started from C0 at a constant WATTS
settled_after() {
	awk -v c0="$1" -v w="$2" -v s="$3" -v amb="$PKG_AMBIENT_C" \
		-v rth="$PKG_RTH_C_PER_W" -v tau="$PKG_TAU_S" 'BEGIN {
		eq = amb + w * rth; printf "%.1f\n", eq + (c0 - eq) * exp(-s / tau) }'
}

# The package sensor as x86_pkg_temp_thermal and coretemp read it: a
# thermal zone whose temperature settles where the power intel_rapl shows
# puts it, rises under load and falls when idle, at the rate the thermal
# model gives.
check_pkg_thermal() {
	local zone hw t_idle t_busy t_cool busy_w want crit e0 ns idle_w idle_want
	zone=$(thermal_zone x86_pkg_temp)
	[ -n "$zone" ] && pass "x86_pkg_temp thermal zone at $zone" ||
		{ fail "no x86_pkg_temp thermal zone ($(cat /sys/class/thermal/thermal_zone*/type 2>/dev/null | paste -sd' '))"; return; }
	hw=$(grep -l '^coretemp$' /sys/class/hwmon/hwmon*/name 2>/dev/null | head -n 1)
	[ -n "$hw" ] && pass "coretemp bound (${hw%/name})" || fail "coretemp did not bind"
	if [ -n "$hw" ]; then
		crit=$(cat "${hw%/name}/temp1_crit" 2>/dev/null)
		expect "coretemp: TjMax from MSR_IA32_TEMPERATURE_TARGET (m°C)" "$crit" "$((PKG_TJMAX_C * 1000))"
	fi
	# three time constants idle: the temperature settles where the mean
	# power over them (intel_rapl) puts it
	e0=$(cat "$(rapl_zone package-0)/energy_uj") ns=$(now_ns)
	sleep 12
	t_idle=$(celsius_of "$(cat "$zone/temp")")
	idle_w=$(awk -v e0="$e0" -v e1="$(cat "$(rapl_zone package-0)/energy_uj")" \
		-v ns="$(($(now_ns) - ns))" 'BEGIN { printf "%.2f\n", (e1 - e0) * 1000 / ns }')
	idle_want=$(awk -v amb="$PKG_AMBIENT_C" -v rth="$PKG_RTH_C_PER_W" -v w="$idle_w" \
		'BEGIN { printf "%.1f\n", amb + w * rth }')
	start_loads
	sleep 12
	t_busy=$(celsius_of "$(cat "$zone/temp")")
	stop_loads
	sleep 12
	t_cool=$(celsius_of "$(cat "$zone/temp")")
	busy_w=$(awk -v n="$NCPU" -v u="$PKG_UNCORE_MW" -v c="$PKG_CORE_MW" 'BEGIN { print (u + n * c) / 1000 }')
	want=$(settled_after "$t_idle" "$busy_w" 12)
	ktap_diag "package: idle $t_idle C, 12 s busy $t_busy C (model $want C), 12 s idle again $t_cool C"
	ktap_diag "idle: $idle_w W from intel_rapl settles at $idle_want C"
	within "idle guest: settled where its $idle_w W put it (C)" "$t_idle" "$idle_want" 2
	within "12 s under load: the model's rise from $t_idle C at $busy_w W (C)" "$t_busy" "$want" 2
	awk -v a="$t_cool" -v b="$t_busy" 'BEGIN { exit !(a < b - 10) }' &&
		pass "idle again: the package cools ($t_busy -> $t_cool C)" ||
		fail "idle again: the package did not cool by 10 C ($t_busy -> $t_cool C)"
}

# thermald_trace ZONE SECONDS FILE: one line a second, "SECOND MILLIDEGREES
# CUR_STATE PKG_C6_TICKS NS", of the package sensor, the cooling device,
# the package C6 residency counter and the clock
thermald_trace() {
	local zone=$1 s=$2 out=$3 i t c
	for ((i = 0; i < s; i++)); do
		read -r t <"$zone/temp"
		read -r c <"$CDEV/cur_state"
		echo "$i $t $c $(msr_read 0 "$MSR_PKG_C6") $(now_ns)"
		sleep 1
	done >"$out"
}

# The passive trip of guest/thermald/thermal-conf.xml, in C
THERMALD_TRIP_C=50

# A client we did not write closing the loop: Debian's thermald, with the
# configuration guest/thermald/thermal-conf.xml (matched to this machine by
# its DMI product name, a passive trip at 50 C on x86_pkg_temp,
# intel_powerclamp its only cooling device). Under full load the package
# would settle near 57 C; thermald must clamp it back to the trip through
# the driver, and let go once the load is gone.
check_pkg_thermald() {
	local zone log=/tmp/thermald.log busy=/tmp/thermald-busy.trace
	local idle=/tmp/thermald-idle.trace pid product hold_max hold_mean peak_state
	local free_c released pc6 need
	product="Standard PC (Q35 + ICH9, 2009)"
	expect "DMI product name, which thermald matches" \
		"$(cat /sys/class/dmi/id/product_name 2>/dev/null)" "$product"
	zone=$(thermal_zone x86_pkg_temp)
	[ -n "$zone" ] || { fail "no x86_pkg_temp thermal zone"; return; }
	command -v thermald >/dev/null || { fail "thermald is not in the rootfs"; return; }
	# setsid -f: not a job of this shell, whose stop_loads waits for its
	# jobs; stdbuf: its log lines reach the file as they are written
	setsid -f stdbuf -oL -eL thermald --no-daemon --loglevel=info \
		--poll-interval 1 --ignore-default-control >"$log" 2>&1
	sleep 5
	pid=$(pgrep -x thermald)
	[ -n "$pid" ] || { fail "thermald did not start: $(tail -n 3 "$log" | paste -sd'|')"; return; }
	# an exact match logs "Product Name matched", a wildcard adds "[wildcard]"
	grep -q 'Product Name matched *$' "$log" &&
		pass "thermald applied the configuration made for this product" ||
		fail "thermald did not match its configuration: $(grep -i -m3 'product\|config\|unsupported' "$log" | paste -sd'|')"
	start_loads
	thermald_trace "$zone" 60 "$busy"
	stop_loads
	thermald_trace "$zone" 40 "$idle"
	kill -0 "$pid" 2>/dev/null && pass "thermald ran through the load" ||
		fail "thermald exited: $(tail -n 3 "$log" | paste -sd'|')"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	ktap_diag "under load, s C state: $(awk '{ printf "%d:%.1f:%d ", $1, $2 / 1000, $3 }' "$busy")"
	ktap_diag "idle again: $(awk '{ printf "%d:%.1f:%d ", $1, $2 / 1000, $3 }' "$idle")"
	ktap_diag "thermald: $(grep -v '^$' "$log" | tail -n 5 | paste -sd'|')"
	set_target 0
	peak_state=$(awk '$3 > m { m = $3 } END { print m + 0 }' "$busy")
	((peak_state > 0)) && pass "thermald clamped through intel_powerclamp (up to $peak_state %)" ||
		{ fail "thermald never set intel_powerclamp's cur_state under load"; return; }
	free_c=$(awk -v n="$NCPU" -v u="$PKG_UNCORE_MW" -v c="$PKG_CORE_MW" \
		-v amb="$PKG_AMBIENT_C" -v rth="$PKG_RTH_C_PER_W" \
		'BEGIN { printf "%.1f\n", amb + (u + n * c) / 1000 * rth }')
	# the last 20 s under load: held at the trip, well below where the
	# package settles unclamped
	hold_mean=$(awk '$1 >= 40 { s += $2; n++ } END { printf "%.1f\n", s / n / 1000 }' "$busy")
	hold_max=$(awk '$1 >= 40 && $2 > m { m = $2 } END { printf "%.1f\n", m / 1000 }' "$busy")
	within "last 20 s under load: package temperature held at the trip (C)" \
		"$hold_mean" "$THERMALD_TRIP_C" 2
	awk -v m="$hold_max" -v f="$free_c" 'BEGIN { exit !(m < f - 3) }' &&
		pass "last 20 s under load: at most $hold_max C, unclamped it settles at $free_c C" ||
		fail "last 20 s under load: up to $hold_max C, not below the unclamped $free_c C by 3"
	# and held there by package sleep: over those 20 s the package's mean
	# power is what keeps it at their mean temperature, which takes this
	# share of package C6 between the busy and the PC6 power
	pc6=$(awk -v mhz="$(tsc_mhz)" '$1 == 40 { t0 = $4; n0 = $5 } END {
		printf "%.1f\n", 100 * ($4 - t0) / (($5 - n0) * mhz / 1000) }' "$busy")
	need=$(awk -v t="$hold_mean" -v n="$NCPU" -v u="$PKG_UNCORE_MW" \
		-v c="$PKG_CORE_MW" -v pc6="$PKG_PC6_MW" -v amb="$PKG_AMBIENT_C" \
		-v rth="$PKG_RTH_C_PER_W" 'BEGIN { busy = (u + n * c) / 1000
		printf "%.1f\n", 100 * (busy - (t - amb) / rth) / (busy - pc6 / 1000) }')
	ktap_diag "last 20 s under load: package C6 $pc6 %, the model needs $need % at $hold_mean C"
	# the sensor reads whole degrees, and one degree is 1.7 W here, 4.8
	# points of package C6 (38.4 % measured where 36.7 was needed)
	within "last 20 s under load: package C6 residency where the model holds $hold_mean C (%)" \
		"$pc6" "$need" 5
	# (a release counts only from a clamp still on when the load stopped)
	[ "$(head -n 1 "$idle" | cut -d' ' -f3)" != 0 ] ||
		{ fail "load gone: nothing to release, cur_state was 0 when the load stopped"; return; }
	released=$(awk '$3 == 0 { print $1; exit }' "$idle")
	[ -n "$released" ] && pass "load gone: thermald released the clamp after $released s" ||
		fail "load gone: cur_state still $(tail -n 1 "$idle" | cut -d' ' -f3) after 40 s"
}

# With two sockets (-smp 2,sockets=2: one vCPU each) every package has its
# own counter, and the controlling CPU moves to the other package when its
# CPU goes offline: no window may pair one package's counters with the
# other's (before the driver kept the package with each sample, the first
# window after the move subtracted socket 0's count from socket 1's).
check_pkg_sockets() {
	local n r0 r1 t0 t1 t=/sys/kernel/tracing bad low measured unmeasured
	n=$(sort -u /sys/devices/system/cpu/cpu*/topology/physical_package_id | wc -l)
	expect "packages in the guest" "$n" 2
	((n == 2)) || return
	# A load on CPU 0 alone: its package stays awake, CPU 1's sleeps. This
	# also leaves package 1's counter ahead of package 0's, so that a window
	# pairing the two below would read more idle than time, not less (which
	# the driver rejects on its own).
	taskset -c 0 bash -c "$LOAD_MARK; while :; do :; done" &
	LOADS+=($!)
	sleep 1
	t0=$(now_ns) r0=$(msr_read 0 "$MSR_PKG_C6") r1=$(msr_read 1 "$MSR_PKG_C6")
	sleep 5
	r0=$(($(msr_read 0 "$MSR_PKG_C6") - r0)) r1=$(($(msr_read 1 "$MSR_PKG_C6") - r1))
	t1=$(now_ns)
	r0=$(percent_of_tsc "$r0" "$((t1 - t0))" "$(tsc_mhz)")
	r1=$(percent_of_tsc "$r1" "$((t1 - t0))" "$(tsc_mhz)")
	stop_loads
	ktap_diag "load on CPU 0 only, 5 s: package 0 C6 $r0 %, package 1 C6 $r1 %"
	between "package 0 (busy CPU 0) stays awake" "$r0" 0 2
	# An idle vCPU under TCG is awake for about a tenth of the time (each
	# wakeup is emulated slowly): 91.2, 90.6, 90.6 and, on a busier host,
	# 85.4 % in four CI runs. Counters shared between the sockets would
	# read the busy package's 0 here.
	between "package 1 (idle CPU 1) sleeps" "$r1" 75 100.5

	start_loads
	set_target 25
	sleep 3
	expect "controlling cpu before the move" "$(stat_field controlling_cpu)" 0
	echo >"$t/trace"
	echo 1 >"$t/events/powerclamp/powerclamp_window/enable"
	sleep 2
	cpu_online 0 0
	sleep 1
	expect "controlling cpu after CPU 0 went offline (package 1)" "$(stat_field controlling_cpu)" 1
	sleep 3
	cpu_online 0 1
	sleep 3
	echo 0 >"$t/events/powerclamp/powerclamp_window/enable"
	set_target 0
	stop_loads
	grep ' powerclamp_window: ' "$t/trace" >/tmp/window.trace
	echo >"$t/trace"
	measured=$(grep -vc 'measured_permille=-1 ' /tmp/window.trace)
	unmeasured=$(grep -c 'measured_permille=-1 ' /tmp/window.trace)
	# Under full load at 25 %, a measured window is near 250 per mille. One
	# that paired package 1's counter with package 0's earlier one reads
	# more idle than time: far above the target, up to 1000. A window can
	# read low for real: the CPU that has just come back online runs its
	# bring-up work before its thread injects (one CI run read a single 0,
	# with the host stalled long enough that the guest marked the TSC
	# unstable), so low readings are shown, not failed.
	permille() {
		awk -v lo="$1" -v hi="$2" '/powerclamp_window/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^measured_permille=/) {
				v = substr($i, 19) + 0
				if (v != -1 && v >= lo && v <= hi) print v } }' \
			/tmp/window.trace | paste -sd' '
	}
	bad=$(permille 451 1000000) low=$(permille 0 99)
	ktap_diag "windows across the move: $measured measured, $unmeasured not paired," \
		"below 100 per mille: ${low:-none}"
	((measured >= 10)) && pass "windows measured across the move ($measured)" ||
		fail "only $measured windows measured across the move"
	[ -z "$bad" ] && pass "no window mixes the packages' counters (none above 450 per mille)" ||
		fail "windows measured more idle than the target allows across the move: $bad"
}

# msr_write CPU MSR VALUE: WRMSR through /dev/cpu/CPU/msr, the value
# little-endian; fails when the CPU raised #GP (the msr device's EIO).
msr_write() {
	local hex bytes="" i
	hex=$(printf '%016x' "$3")
	for ((i = 14; i >= 0; i -= 2)); do bytes+="\\x${hex:i:2}"; done
	# shellcheck disable=SC2059  # the format is the escaped bytes
	printf "$bytes" | dd of="/dev/cpu/$1/msr" bs=8 count=1 seek="$2" \
		oflag=seek_bytes conv=notrunc status=none 2>/dev/null
}

# Made when a check writes MSRs: the msr device taints the kernel at every
# write (TAINT_CPU_OUT_OF_SPEC), and check_health allows it then only.
# A file, since each check runs in a subshell.
PC_WROTE_MSRS=/run/powerclamp-wrote-msrs

# msr_keeps NAME CPU MSR VALUE: a write of VALUE, all of it defined bits,
# takes and reads back.
msr_keeps() {
	local got
	if ! msr_write "$2" "$3" "$4"; then
		fail "$1: a write of defined bits $(printf '%#x' "$4") faulted (GP)"
		return
	fi
	got=$(msr_read "$2" "$3")
	expect "$1: reads back what was written" "$(printf '%#x' "$got")" "$(printf '%#x' "$4")"
}

# msr_refuses NAME CPU MSR VALUE [moves]: a write of VALUE raises #GP and
# the MSR keeps what it held (a counter keeps counting, from where it
# was); with "moves", an MSR the model changes by itself (a temperature
# readout), only the #GP is judged.
msr_refuses() {
	local before after
	before=$(msr_read "$2" "$3")
	if msr_write "$2" "$3" "$4"; then
		fail "$1: a write of $(printf '%#x' "$4") was taken, not a GP fault"
		return
	fi
	after=$(msr_read "$2" "$3")
	if [ "${5:-}" = moves ]; then
		pass "$1: write of $(printf '%#x' "$4") faulted (GP)"
	elif [ "$4" = 0 ] && ((before > 0)); then
		((after >= before)) && pass "$1: write faulted (GP), value kept ($before -> $after)" ||
			fail "$1: write faulted (GP), but the value fell ($before -> $after)"
	else
		((after == before)) && pass "$1: write of $(printf '%#x' "$4") faulted (GP), value kept" ||
			fail "$1: write faulted (GP), but the value changed ($before -> $after)"
	fi
}

# The model's MSRs under writes, as the SDM has them: the counters, units
# and limits raise #GP; the thresholds and the power limit keep their
# defined bits and raise #GP on a reserved one; the C-state configuration
# keeps its demotion bits and raises #GP on a change to its locked bits
# 15:0; the thermal status MSRs take their defined bits (clearing log
# flags the model never sets), also read back and written as
# x86_pkg_temp_thermal clears a threshold's log flag. Every MSR written
# is restored.
check_pkg_msr_writes() {
	local msr name saved
	: >"$PC_WROTE_MSRS"
	for name in PKG_C6_RESIDENCY:0x3f9 CORE_C6_RESIDENCY:0x3fd PKG_ENERGY_STATUS:0x611 \
		PP0_ENERGY_STATUS:0x639 RAPL_POWER_UNIT:0x606 PKG_POWER_INFO:0x614 \
		TEMPERATURE_TARGET:0x1a2 PLATFORM_INFO:0xce; do
		msr_refuses "read-only ${name%%:*}" 0 "$((${name#*:}))" 0
	done

	msr=$((0xe2)) saved=$(msr_read 0 "$msr")
	msr_refuses "PKG_CST_CONFIG_CONTROL, locked bits 15:0 changed" 0 "$msr" \
		$((saved & ~0xffff))
	# C1 auto-demotion (bit 26) switched, as intel_idle's switch does
	msr_keeps "PKG_CST_CONFIG_CONTROL, demotion bit 26" 0 "$msr" $((saved ^ (1 << 26)))
	msr_refuses "PKG_CST_CONFIG_CONTROL, reserved bit 31" 0 "$msr" $((saved | 1 << 31))
	msr_write 0 "$msr" "$saved"

	msr=$((0x1b2)) saved=$(msr_read 0 "$msr")
	msr_keeps "PACKAGE_THERM_INTERRUPT" 0 "$msr" $((0x00123403))
	msr_refuses "PACKAGE_THERM_INTERRUPT, reserved bit 3" 0 "$msr" $((0x0012340b))
	msr_write 0 "$msr" "$saved"

	msr=$((0x19b)) saved=$(msr_read 0 "$msr")
	msr_keeps "THERM_INTERRUPT" 0 "$msr" $((0x0012341b))
	msr_refuses "THERM_INTERRUPT, reserved bit 5" 0 "$msr" $((0x0012343b))
	msr_write 0 "$msr" "$saved"

	msr=$((0x610)) saved=$(msr_read 0 "$msr")
	if ((saved >> 63)); then
		ktap_skip "PKG_POWER_LIMIT writes" "locked ($(printf '%#x' "$saved"))"
	else
		msr_keeps "PKG_POWER_LIMIT" 0 "$msr" $((0x00dd8078005a8050))
		msr_refuses "PKG_POWER_LIMIT, reserved bit 24" 0 "$msr" $((0x00dd8078015a8050))
		msr_write 0 "$msr" "$saved"
	fi

	msr_write 0 $((0x19c)) 0 && pass "THERM_STATUS: a write of 0 (clearing log flags) taken" ||
		fail "THERM_STATUS: a write of 0 faulted (GP)"
	msr_refuses "THERM_STATUS, reserved bit 23" 0 $((0x19c)) $((0x00800000)) moves
	msr_write 0 $((0x1b1)) 0 && pass "PACKAGE_THERM_STATUS: a write of 0 taken" ||
		fail "PACKAGE_THERM_STATUS: a write of 0 faulted (GP)"
	msr_refuses "PACKAGE_THERM_STATUS, reserved bit 12" 0 $((0x1b1)) $((0x00001000)) moves
	# x86_pkg_temp_thermal's clearing of threshold 1's log flag (bit 7)
	msr_write 0 $((0x1b1)) $(($(msr_read 0 $((0x1b1))) & ~(1 << 7))) &&
		pass "PACKAGE_THERM_STATUS: its value read back and written, a log flag cleared, taken" ||
		fail "PACKAGE_THERM_STATUS: its value read back and written faulted (GP): $(printf '%#x' "$(msr_read 0 $((0x1b1)))")"
}

# first_windows_after_online CPU SECONDS: bring CPU back online with the
# powerclamp_window events on, and print the measured_permille of each
# window of the next SECONDS, one per line
first_windows_after_online() {
	local t=/sys/kernel/tracing
	echo 1 >"$t/events/powerclamp/powerclamp_window/enable"
	echo >"$t/trace"
	cpu_online "$1" 1
	sleep "$2"
	echo 0 >"$t/events/powerclamp/powerclamp_window/enable"
	sed -n 's/.* powerclamp_window: .* measured_permille=\(-\{0,1\}[0-9]*\) .*/\1/p' "$t/trace"
	echo >"$t/trace"
}

# A window never spans a change of the CPUs clamped: with cpumask=1 and
# CPU 1 offline for 3 s, the first window after it comes back must not
# pair the package counters read before the outage with those read after
# it (unmeasured: -1), and the driver measures again from the next one.
# The guest is idle: under load the outage reads as a package that never
# slept, which the driver already refuses as still counters.
check_pkg_window_outage() {
	local -a m
	echo 1 >"$PARAMS/cpumask"
	set_target 25
	sleep 2
	cpu_online 1 0
	sleep 3
	mapfile -t m < <(first_windows_after_online 1 2)
	set_target 0
	ktap_diag "windows after CPU 1 came back, measured per mille: ${m[*]}"
	expect "first window after the outage: not measured" "${m[0]:-none}" -1
	((${#m[@]} > 2)) && [ "${m[2]}" != -1 ] &&
		pass "the third window after the outage is measured (${m[2]})" ||
		fail "no measured window after the outage: ${m[*]}"
}

# The package counters given up are tried again at the next start: with
# cpumask=0 and both CPUs busy, CPU 1 keeps the package awake, its
# counters stay still through windows with injection, and the driver
# falls back to CPU idle time; clamping every CPU again must go back to
# the counters.
check_pkg_feedback_reprobe() {
	expect "feedback source before" "$(stat_field feedback_source)" pkg-cstate-msr
	echo 0 >"$PARAMS/cpumask"
	start_loads
	set_target 25
	sleep 4
	expect "cpumask=0, CPU 1 busy: fell back to CPU idle time" \
		"$(stat_field feedback_source)" cpu-idle-time
	set_target 0
	stop_loads
	echo "0-$((NCPU - 1))" >"$PARAMS/cpumask"
	set_target 25
	sleep 1
	expect "every CPU clamped again: feedback from the package counters" \
		"$(stat_field feedback_source)" pkg-cstate-msr
	set_target 0
}

# read_pkg_counters SECONDS CPU...: read the package C6 residency (0x3f9)
# and package energy (0x611, 32 bits that wrap) through each CPU's
# /dev/cpu/N/msr in turn, as fast as perl can, for SECONDS. Prints "READS
# C6_BACK ENERGY_BACK WORST": the reads, how many of each counter read
# below the read before (of any CPU: one package), and the largest step
# back of the residency in TSC ticks.
read_pkg_counters() {
	perl -e '
		my ($secs, @cpus) = @ARGV;
		my (%fh, %last, %back);
		my ($reads, $worst) = (0, 0);
		for my $c (@cpus) {
			open($fh{$c}, "<:raw", "/dev/cpu/$c/msr") or die "cpu$c: $!";
		}
		my $end = time + $secs;
		while (time < $end) {
			for my $c (@cpus) {
				for my $msr (0x3f9, 0x611) {
					sysseek($fh{$c}, $msr, 0) or die "seek: $!";
					sysread($fh{$c}, my $buf, 8) == 8 or die "read: $!";
					my $v = unpack("Q<", $buf);
					$v &= 0xffffffff if $msr == 0x611;
					my $l = $last{$msr};
					# a 32-bit wrap of the energy counter is not a step back
					if (defined $l && $v < $l &&
					    !($msr == 0x611 && $l - $v > 0x80000000)) {
						$back{$msr}++;
						$worst = $l - $v if $msr == 0x3f9 && $l - $v > $worst;
					}
					$last{$msr} = $v;
					$reads++;
				}
			}
		}
		printf "%d %d %d %d\n", $reads, $back{0x3f9} // 0, $back{0x611} // 0, $worst;
	' "$@"
}

# The package counters never run backwards: read from every CPU in a
# tight loop for 20 s under full load clamped at 40 %, where the vCPUs
# halt and wake together, each read is at least the one before.
check_pkg_counters_monotonic() {
	local reads c6_back energy_back worst cpus
	mapfile -t cpus < <(online_cpus)
	start_loads
	set_target 40
	sleep 2
	read -r reads c6_back energy_back worst < <(read_pkg_counters 20 "${cpus[@]}")
	set_target 0
	stop_loads
	ktap_diag "$reads reads in 20 s; the residency stepped back by up to $worst TSC ticks"
	((reads > 1000)) && pass "read the counters $reads times in 20 s" ||
		fail "only ${reads:-0} reads of the counters in 20 s"
	expect "package C6 residency reads below the one before" "$c6_back" 0
	expect "package energy reads below the one before" "$energy_back" 0
}
