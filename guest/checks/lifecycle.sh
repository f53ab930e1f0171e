# Guest checks: load, start, retarget, stop, skip when idle, unload. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# A fresh load: the device as it is registered, and what the load logged.
check_device() {
	local logged
	rmmod "$MODULE" || { fail "rmmod before a fresh load"; return; }
	logged=$(dmesg | wc -l)
	modprobe "$MODULE" || { fail "modprobe $MODULE"; return; }
	pass "modprobe $MODULE"
	CDEV=$(cdev_dir)
	[ -n "$CDEV" ] || { fail "no cooling device of type $MODULE"; return; }
	pass "cooling device $CDEV has type $MODULE"
	expect "max_state" "$(cat "$CDEV/max_state")" 50
	expect "cur_state when idle" "$(cat "$CDEV/cur_state")" 0
	expect "no kidle_inject threads at target 0" "$(clamp_threads | wc -l)" 0
	expect "feedback source (MSRs read 0 under TCG)" "$(stat_field feedback_source)" cpu-idle-time
	expect "feedback source logged once by this load" \
		"$(dmesg | tail -n +"$((logged + 1))" | grep -c "$MODULE: feedback from cpu-idle-time")" 1
	grep -q '^pct confidence steady dynamic' "$DEBUG_DIR/powerclamp_calib" &&
		pass "powerclamp_calib header" || fail "powerclamp_calib header"
	expect "powerclamp_calib rows 0..50 (max_idle)" "$(calib_rows)" 51
}

check_start_stop() {
	local pids_before pids_after t0
	set_target 25
	expect "cur_state reads back the target" "$(cat "$CDEV/cur_state")" 25
	sleep 1
	assert_threads "$(online_cpus | paste -sd,)" "start"
	pids_before=$(clamp_threads | awk '{ print $1 }' | paste -sd,)
	set_target 40
	expect "retarget keeps the threads" \
		"$(clamp_threads | awk '{ print $1 }' | paste -sd,)" "$pids_before"
	expect "cur_state after retarget" "$(cat "$CDEV/cur_state")" 40
	set_target 50
	expect "target 50 (max_state) reads back" "$(cat "$CDEV/cur_state")" 50
	t0=$(now_ns)
	set_target 0
	ktap_diag "stopping took $((($(now_ns) - t0) / 1000000)) ms"
	pids_after=$(clamp_threads | wc -l)
	expect "stop removes every thread" "$pids_after" 0
	expect "cur_state after stop" "$(cat "$CDEV/cur_state")" 0
}

# On an idle guest the threads may run this share of the CPUs' time (%)
# while every window is skipped: a wakeup per interval to look at the plan.
# Measured on the debug kernel 0.5 % at 25 and 0.7-0.9 at 40; a driver
# that injects every period shows the target itself (51.4 % at 50, where
# skipping does not work yet).
SKIP_THREADS_MAX=${SKIP_THREADS_MAX:-5}

# skip_at_target TARGET: on an idle system the controller skips every
# window at TARGET, as its counters say, and the threads stay off the CPUs,
# as the scheduler's run time of them (schedstat, forced idle included)
# says.
skip_at_target() {
	local target=$1 s0 s1 w0 w1 i0 i1 ran
	set_target "$target"
	sleep 2
	s0=$(stat_field windows_skipped)
	w0=$(stat_field windows)
	i0=$(stat_field injections)
	read -r _ _ _ _ _ ran _ < <(measure_window 4)
	s1=$(stat_field windows_skipped)
	w1=$(stat_field windows)
	i1=$(stat_field injections)
	set_target 0
	# The counters are read one after the other: allow one window of skew,
	# out of at least five (a window is two 96 ms intervals at 25 %, so 4 s
	# hold about 20): one skipped window proves nothing. On the emulated
	# package (feedback from package C6, which needs every CPU idle at
	# once) the check's own reads can wake the package for a window, and
	# the decision to inject then holds from the next boundary, so its
	# periods fall into two windows: 21 of 23 skipped in 1 boot of 3.
	local skew=1
	[ "$(stat_field feedback_source)" = pkg-cstate-msr ] && skew=2
	if ((w1 - w0 >= 5 && s1 - s0 >= w1 - w0 - skew)); then
		pass "idle system at $target: every window skipped ($((s1 - s0)) of $((w1 - w0)))"
	else
		fail "idle system at $target: $((s1 - s0)) of $((w1 - w0)) windows skipped"
	fi
	# At most the windows of skew above, each window_size (2) intervals on
	# every CPU: on the emulated package 6 injections were seen with 22 of
	# 23 windows skipped, the periods of one decision falling on both sides
	# of a window end. Clamping an idle system that skips nothing injects
	# about 80 in 4 s on 2 CPUs (a 96 ms interval at 25 %).
	((i1 - i0 <= skew * 2 * NCPU)) && pass "idle system at $target: injections stop ($((i1 - i0)) in 4 s)" ||
		fail "idle system at $target: $((i1 - i0)) injections in 4 s"
	between "idle system at $target: the threads' run time (% of the CPUs, schedstat)" \
		"$ran" 0 "$SKIP_THREADS_MAX"
}

# An idle system is idle enough: the controller skips every window, at 25
# and 40. (From 50 on it does not yet: the natural idle it judges cannot
# exceed 100 less the target; docs/notes.md.) On the emulated package's
# MSR path only at 25: at 40 its shorter windows let a decision's periods
# spill past the injections allowed (10 in 4 s against 8, with 35 of 37
# windows skipped and the threads at 2.1 %).
check_skip_when_idle() {
	local target targets=(25 40)
	[ "$(stat_field feedback_source)" = pkg-cstate-msr ] && targets=(25)
	for target in "${targets[@]}"; do
		skip_at_target "$target"
	done
}

check_unload() {
	set_target 30
	sleep 1
	if rmmod "$MODULE"; then pass "rmmod while clamping"; else fail "rmmod while clamping"; fi
	expect "no thread after rmmod" "$(clamp_threads | wc -l)" 0
	expect "cooling device gone" "$(cdev_dir)" ""
	[ -d "$DEBUG_DIR" ] && fail "debugfs dir left behind" || pass "debugfs dir removed"
	modprobe "$MODULE" && CDEV=$(cdev_dir) && pass "modprobe again" || fail "modprobe again"
}

