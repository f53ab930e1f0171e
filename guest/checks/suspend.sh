# Guest checks: suspend and the freezer while clamping. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# The task freezer with clamping active: the threads are frozen and thawed
# and carry on at the same target.
check_suspend_freezer() {
	local mode
	if grep -qw mem /sys/power/state; then mode=mem; else mode=freeze; fi
	set_target 30
	sleep 1
	echo freezer >/sys/power/pm_test
	if echo "$mode" >/sys/power/state; then
		pass "pm_test freezer ($mode) with clamping active"
	else
		fail "pm_test freezer ($mode) failed"
	fi
	echo none >/sys/power/pm_test
	sleep 1
	assert_threads "$(online_cpus | paste -sd,)" "after thaw"
	expect "target after thaw" "$(cat "$CDEV/cur_state")" 30
	set_target 0
}

