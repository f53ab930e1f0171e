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

