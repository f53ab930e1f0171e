# Guest checks: the max_idle parameter. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

check_max_idle() {
	local v cdev_before=$CDEV lost
	expect "max_idle default" "$(cat "$PARAMS/max_idle")" 50
	for v in "" 0 86 101 abc -1 5abc 0x10; do
		write_rejected "max_idle <- '$v'" "$PARAMS/max_idle" "$v"
	done
	set_target 10
	write_rejected "max_idle while clamping" "$PARAMS/max_idle" 70 "Device or resource busy"
	dmesg | grep -q "max_idle: cannot change while clamping" &&
		pass "max_idle while clamping logs why" || fail "no log line for max_idle while clamping"
	set_target 0

	echo 70 >"$PARAMS/max_idle"
	CDEV=$(cdev_dir)
	expect "max_idle 70: max_state" "$(cat "$CDEV/max_state")" 70
	expect "max_idle 70: cooling device keeps its number" "$CDEV" "$cdev_before"
	expect "max_idle 70: powerclamp_calib rows 0..70" "$(calib_rows)" 71
	write_rejected "max_idle 70: cur_state <- 71" "$CDEV/cur_state" 71
	start_loads
	set_target 70
	expect "max_idle 70: cur_state reads back 70" "$(cat "$CDEV/cur_state")" 70
	sleep 3
	read -r _ lost _ _ _ < <(measure_window 4)
	# (includes what the loads lose unclamped: 3-7 points on 4 vCPUs sharing 2 cores)
	within "max_idle 70: the loads lose 70 % (points)" "$lost" 70 10
	set_target 0
	stop_loads

	echo 20 >"$PARAMS/max_idle"
	CDEV=$(cdev_dir)
	expect "max_idle 20: max_state" "$(cat "$CDEV/max_state")" 20
	write_rejected "max_idle 20: cur_state <- 25" "$CDEV/cur_state" 25
	echo 50 >"$PARAMS/max_idle"
	CDEV=$(cdev_dir)
	expect "max_idle back to 50: max_state" "$(cat "$CDEV/max_state")" 50
}


# The injecting threads are SCHED_FIFO, so forced idle counts against the
# RT budget (sched_rt_runtime_us of sched_rt_period_us): a target it
# cannot hold gets the threads throttled, and with them every other RT
# task of the CPU. The driver reads the budget at each write and takes
# targets up to that share less 10 points (85 at the default 95 %), so at
# a budget of 50 %: 40, not 41 or 60, with EINVAL, a message and nothing
# changed; with RT throttling off (-1), up to max_idle.
check_rt_budget() {
	local rt=/proc/sys/kernel/sched_rt_runtime_us old lost throttled
	old=$(cat "$rt")
	expect "sched_rt_runtime_us default" "$old" 950000
	echo 85 >"$PARAMS/max_idle"
	CDEV=$(cdev_dir)
	expect "max_idle 85: max_state" "$(cat "$CDEV/max_state")" 85
	throttled=$(dmesg | grep -c 'RT throttling activated')
	echo 500000 >"$rt"
	start_loads
	if printf '60\n' 2>/dev/null >"$CDEV/cur_state"; then
		# what the refusal spares: the threads throttled by the budget
		sleep 3
		read -r _ lost _ _ _ < <(measure_window 4)
		ktap_diag "budget 50 %: cur_state 60 taken, the loads lost $lost %; RT throttling messages $throttled before, $(dmesg | grep -c 'RT throttling activated') after"
		set_target 0
	fi
	stop_loads
	echo 0 >"$CDEV/cur_state"
	write_rejected "budget 50 %: cur_state <- 60" "$CDEV/cur_state" 60
	write_rejected "budget 50 %: cur_state <- 41" "$CDEV/cur_state" 41
	dmesg | grep -q "cur_state: 41% idle does not fit the RT budget" &&
		pass "a target above the RT budget logs why" ||
		fail "no log line for a target above the RT budget"
	set_target 40
	expect "budget 50 %: cur_state 40 taken" "$(cat "$CDEV/cur_state")" 40
	set_target 0
	echo -1 >"$rt"
	set_target 85
	expect "RT throttling off: cur_state 85 taken" "$(cat "$CDEV/cur_state")" 85
	set_target 0
	echo "$old" >"$rt"
	write_rejected "budget back to 95 %, max_idle 85: cur_state <- 86" "$CDEV/cur_state" 86
	echo 50 >"$PARAMS/max_idle"
	CDEV=$(cdev_dir)
	expect "max_idle back to 50: max_state" "$(cat "$CDEV/max_state")" 50
}
