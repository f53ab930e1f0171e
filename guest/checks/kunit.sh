# Guest checks: the KUnit suite. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# The suite is a module of its own (intel_powerclamp_test): KUnit runs it
# when that module loads and keeps its KTAP document in debugfs until the
# module goes. The driver's own load (the reset loaded it) must not run it:
# it did once, at each of the ~435 loads of the functional boot. The
# document is nested here as it is, one level in, so the host parses its
# plan and every case like any other subtest; this check's result is the
# suite's.
check_kunit() {
	local results=/sys/kernel/debug/kunit/$MODULE/results test=${MODULE}_test suite
	[ ! -e "$results" ] && pass "kunit: the driver's load runs no suite" ||
		fail "kunit: the driver's load ran the suite ($results exists before $test)"
	if ! modprobe "$test"; then
		fail "kunit: modprobe $test"
		return
	fi
	if [ ! -r "$results" ]; then
		fail "kunit: no results at $results"
	else
		sed "s/^/$KTAP_INDENT    /" "$results"
		suite=$(tail -n 1 "$results")
		case "$suite" in
		"ok 1 $MODULE") pass "kunit: suite $MODULE" ;;
		*) fail "kunit: suite $MODULE: '$suite'" ;;
		esac
	fi
	rmmod "$test" || fail "kunit: rmmod $test"
}
