# Guest checks: suspend and the freezer while clamping. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# injecting_again WHEN TARGET: under full load the threads' scheduler run
# time (forced idle included) is the target's share of their CPUs again:
# injection resumed, not only the target read back. 5 points: on the
# debug kernel it read 25.2-26.1 at 25 after every level and S3, and 31.6
# at 30 after the freezer (2026-12-06); threads that exist but do not
# inject show 0 (tests/breaks/no-resume.diff).
injecting_again() {
	local ran
	start_loads
	sleep 1
	read -r _ _ _ _ _ ran _ < <(measure_window 3)
	stop_loads
	within "$1: the threads' run time under load (% of the CPUs)" "$ran" "$2" 5
}

# The task freezer with clamping active: clamping carries on afterwards at
# the same target.
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
	injecting_again "after thaw" 30
	set_target 0
}


# Every pm_test level with clamping active, the deepest last: from
# "devices" on the devices are suspended, from "processors" on the non-boot
# CPUs are taken down (with the threads still there, which patch 6's PM
# notifier now stops before the freezer, this hung in cpuhp). Each level
# must return, and clamping carry on at the same target on every online
# CPU. A hang here stops the boot, so it has a boot of its own with a short
# timeout (guest/boots).
check_suspend_levels() {
	pm_test_levels mem
}

# The same for hibernation (no image is written at any pm_test level, so
# no swap is needed).
check_hibernate_levels() {
	pm_test_levels disk
}

# pm_test_levels STATE: every pm_test level of a suspend to STATE (mem or
# disk) with clamping active at 25 %
pm_test_levels() {
	local state=$1 level t0 levels
	if ! grep -qw "$state" /sys/power/state; then
		fail "$state is not offered in /sys/power/state ($(cat /sys/power/state))"
		return
	fi
	levels=$(tr -d '[]' </sys/power/pm_test)
	ktap_diag "$state; pm_test offers: $levels; mem_sleep: $(cat /sys/power/mem_sleep 2>/dev/null)"
	set_target 25
	sleep 1
	for level in freezer devices platform processors core; do
		if [[ " $levels " != *" $level "* ]]; then
			fail "pm_test $level: not offered by this kernel ($levels)"
			continue
		fi
		echo "$level" >/sys/power/pm_test
		t0=$(now_ns)
		if echo "$state" >/sys/power/state; then
			pass "$state at pm_test $level returns while clamping ($((($(now_ns) - t0) / 1000000)) ms)"
		else
			fail "$state at pm_test $level failed"
		fi
		echo none >/sys/power/pm_test
		sleep 1
		assert_threads "$(online_cpus | paste -sd,)" "after $state at pm_test $level"
		expect "target after $state at pm_test $level" "$(cat "$CDEV/cur_state")" 25
		injecting_again "after $state at pm_test $level" 25
	done
	set_target 0
}

# A real S3 cycle while clamping: the RTC alarm wakes the guest (QEMU's
# RTC is a wake source once the guest enables it through ACPI), and the
# kernel's own count of successful suspends must go up by one.
check_suspend_s3() {
	local alarm=/sys/class/rtc/rtc0/wakealarm stats=/sys/kernel/debug/suspend_stats
	local before after
	[ -w "$alarm" ] || { fail "S3: no RTC wake alarm at $alarm"; return; }
	if ! grep -qw deep /sys/power/mem_sleep; then
		fail "S3: mem_sleep offers no deep state ($(cat /sys/power/mem_sleep))"
		return
	fi
	echo deep >/sys/power/mem_sleep
	before=$(awk '$1 == "success:" { print $2 }' "$stats")
	set_target 25
	sleep 1
	echo 0 >"$alarm"
	echo +5 >"$alarm"
	if echo mem >/sys/power/state; then
		pass "S3: suspend to RAM while clamping returns (woken by the RTC)"
	else
		fail "S3: suspend to RAM failed"
	fi
	after=$(awk '$1 == "success:" { print $2 }' "$stats")
	expect "S3: successful suspends counted" "$((after - before))" 1
	sleep 1
	assert_threads "$(online_cpus | paste -sd,)" "after S3"
	expect "S3: target after resume" "$(cat "$CDEV/cur_state")" 25
	injecting_again "after S3" 25
	set_target 0
}
