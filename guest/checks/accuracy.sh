# Guest checks: accuracy against independent references. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# Plain idle accounting, which patches 0001 and 0002 change for every idle
# entry: an idle guest, module loaded at target 0, must show all its wall
# time as idle in /proc/stat, and account every tick.
check_idle_accounting() {
	local idle ticks
	sleep 1
	read -r idle _ ticks _ _ < <(measure_window 10)
	ktap_diag "idle guest: /proc/stat idle $idle% of wall, ticks $ticks% of wall"
	within "idle guest: /proc/stat idle (% of wall)" "$idle" 100 "$TOL_IDLE_PCT"
	within "idle guest: /proc/stat ticks (% of wall)" "$ticks" 100 "$TOL_TICKS_PCT"
}

# The clamp judged by references the driver does not compute: the work the
# loads lost (their schedstat runtime against wall time), /proc/stat's idle
# and its ticks against wall time. The driver's own figures (its measured
# ratio, its injected time) are printed; the measured ratio is held only
# against the work lost.
# unclamped_window SECONDS: measure_window with the loads running and no
# clamp; sets BASE_LOST and BASE_TICKS. A window in which the loads lost
# less than -0.5 % of wall time (ran longer than the wall clock: the
# guest's clocks disagreed, as when the host stalls the vCPU) measures
# nothing and is taken again, 3 windows at most; each one refused is
# printed, and a third refused fails.
unclamped_window() {
	local try
	for try in 1 2 3; do
		read -r _ BASE_LOST BASE_TICKS _ _ < <(measure_window "$1")
		awk -v l="$BASE_LOST" 'BEGIN { exit !(l >= -0.5) }' && return
		ktap_diag "unclamped window $try refused: the loads lost $BASE_LOST% of wall time"
	done
	# every figure after this is held against a baseline that was refused
	fail "unclamped baseline refused 3 times (the loads lost $BASE_LOST% of wall time, want at least -0.5)"
}

# thread_cputime: "UTIME STIME" summed over the kidle_inject threads: what
# /proc/PID/stat (and so top) charges them, in clock ticks (USER_HZ). Their
# scheduler run time is read with the loads' (measure_window).
thread_cputime() {
	local pid _ user=0 sys=0 ut st
	while read -r pid _; do
		read -r ut st < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
		user=$((user + ut)) sys=$((sys + st))
	done < <(clamp_threads)
	echo "$user $sys"
}

# thread_cputime_share BEFORE AFTER NS: "UTIME STIME" of the threads
# between two thread_cputime readings NS apart, each as a share of their
# CPUs' wall time (%)
thread_cputime_share() {
	awk -v b="$1" -v a="$2" -v s="$(($3 / 1000000))e-3" -v n="$(clamp_threads | wc -l)" \
		-v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(b, x, " "); split(a, y, " ")
		if (n == 0 || s <= 0) { print "-1 -1"; exit }
		printf "%.1f %.1f\n", 100 * (y[1] - x[1]) / hz / s / n,
			100 * (y[2] - x[2]) / hz / s / n }'
}

check_accuracy() {
	local target m idle lost ticks drv inj ran base_lost base_ticks clamp_lost c0 c1 t0 ut st
	start_loads
	sleep 1
	unclamped_window 10
	base_lost=$BASE_LOST base_ticks=$BASE_TICKS
	ktap_diag "unclamped: the loads lose $base_lost% of wall time, /proc/stat accounts $base_ticks% of it"
	for target in 10 25 40 49; do
		set_target "$target"
		sleep 3 # let the first windows and the calibration pass
		c0=$(thread_cputime) t0=$(now_ns)
		read -r idle lost ticks drv inj ran _ < <(measure_window 10)
		c1=$(thread_cputime)
		clamp_lost=$(difference "$lost" "$base_lost")
		ktap_diag "target $target: /proc/stat idle $idle%, work lost $lost% ($clamp_lost% to the clamp), ticks $ticks% of wall, driver measured $drv%, injected $inj%"
		read -r ut st < <(thread_cputime_share "$c0" "$c1" "$(($(now_ns) - t0))")
		ktap_diag "target $target: kidle_inject threads: utime $ut%, stime $st% of their CPUs, run time (forced idle included) $ran%"
		ktap_diag "stats: $(paste -sd' ' "$DEBUG_DIR/stats")"
		within "target $target: /proc/stat idle vs target" "$idle" "$target" "$TOL_TARGET"
		within "target $target: work lost to the clamp vs target" "$clamp_lost" "$target" "$TOL_TARGET"
		between "target $target: work lost to the clamp minus /proc/stat idle" \
			"$(difference "$clamp_lost" "$idle")" "$LOST_OVER_IDLE_MIN" "$LOST_OVER_IDLE_MAX"
		# A kernel that drops or double-counts the forced-idle ticks moves
		# them by the target; a host that does not run a vCPU drops busy
		# ticks too (90.7 % in one CI window at 10, with idle, work lost
		# and the driver at 9.9, 9.9 and 10.0). Judged where a defect
		# lands at least TOL_TICKS_LOADED beyond the band: 25, 40, 49.
		if ((target >= 2 * TOL_TICKS_LOADED)); then
			within "target $target: /proc/stat ticks (% of wall)" "$ticks" 100 "$TOL_TICKS_LOADED"
		fi
		between "target $target: work lost to the clamp minus the driver's measured ratio" \
			"$(difference "$clamp_lost" "$drv")" "$LOST_OVER_IDLE_MIN" "$LOST_OVER_IDLE_MAX"
		# top charges the threads their time outside forced idle only
		between "target $target: kidle_inject threads' utime+stime (% of their CPUs)" \
			"$(awk -v u="$ut" -v s="$st" 'BEGIN { printf "%.1f", u + s }')" 0 "$THREAD_CPUTIME_MAX"
	done
	set_target 0
	stop_loads
	m=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0' "$DEBUG_DIR/powerclamp_calib" | wc -l)
	((m > 0)) && pass "calibration learnt ($m ratios with confidence)" ||
		fail "calibration table untouched after clamping under load"
}


# High targets: with max_idle at its limit, 85,
# each target from 60 up must be reached, as /proc/stat's idle shows it,
# and a higher target must never give less idle. Approached from below, so
# no neighbour is confident and no compensation is added: what is measured
# is the interval plan itself. (Before the fix 85, 90 and 99 gave 77, 61
# and 50 %. Above 85, RT throttling stops the SCHED_FIFO threads: 95 gave
# 91 %, 99 gave 70 %, and 90 logged "RT throttling activated" in 2 runs of
# 3, so max_idle stops at 85; the console scan fails the boot on that
# message.)
#
# The loads lose the forced idle plus what the injecting threads run
# outside it, each period's wakeup and its entry into and exit from the
# idle loop: under TCG 0.4 to 1.3 ms a period, 2.4 to 3.5 points at 75
# (31 periods a second a CPU, the most of any target), where on hardware
# it is some microseconds. So the work lost is held against the threads' run
# time (forced idle included, from their schedstat, which the loads'
# schedstat does not see), and that cost on its own to a band: threads
# that busy-waited for their boundary fail the band, a clamp that lost the
# loads' time elsewhere fails the first.
check_high_targets() {
	local target idle lost ticks drv inj ran per base_lost clamp_lost cost prev=0
	echo 85 >"$PARAMS/max_idle"
	CDEV=$(cdev_dir) # max_idle registers the cooling device again
	expect "max_idle 85: max_state" "$(cat "$CDEV/max_state")" 85
	start_loads
	sleep 1
	unclamped_window 6
	base_lost=$BASE_LOST
	ktap_diag "unclamped: the loads lose $base_lost% of wall time"
	for target in 60 70 75 80 85; do
		set_target "$target"
		sleep 3
		read -r idle lost ticks drv inj ran per < <(measure_window 8)
		clamp_lost=$(difference "$lost" "$base_lost")
		cost=$(difference "$ran" "$idle")
		ktap_diag "target $target: /proc/stat idle $idle%, work lost $lost% ($clamp_lost% to the clamp), ticks $ticks% of wall, driver measured $drv%, injected $inj%"
		ktap_diag "target $target: the injecting threads ran $ran% of wall, $cost points beyond the idle: $(awk -v c="$cost" -v p="$per" 'BEGIN { printf "%.2f", (p > 0 ? 10 * c / p : -1) }') ms in each of $per periods a CPU-second"
		ktap_diag "stats: $(paste -sd' ' "$DEBUG_DIR/stats")"
		within "high target $target: /proc/stat idle vs target" "$idle" "$target" "$TOL_HIGH_TARGET"
		within "high target $target: work lost to the clamp vs the injecting threads' run time" \
			"$clamp_lost" "$ran" "$TOL_HIGH_TARGET"
		between "high target $target: the threads' run time beyond the idle (points)" \
			"$cost" "$THREAD_COST_MIN" "$THREAD_COST_MAX"
		awk -v a="$idle" -v b="$prev" 'BEGIN { exit !(a >= b) }' &&
			pass "high target $target: idle $idle% not below the previous target's $prev%" ||
			fail "high target $target: idle $idle% below the previous target's $prev%"
		prev=$idle
	done
	set_target 0
	stop_loads
}
