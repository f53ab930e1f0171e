# Guest checks: the KUnit suite. Sourced by run-checks.sh.
# shellcheck shell=bash
# pass() never fails, so "cond && pass || fail" is a safe if-then-else here.
# shellcheck disable=SC2015

# KUnit runs the driver's suite when the module loads and keeps its KTAP
# document in debugfs. It is nested here as it is, one level in, so the
# host parses its plan and every case like any other subtest; this check's
# own result is the suite's.
check_kunit() {
	local results=/sys/kernel/debug/kunit/$MODULE/results suite
	if [ ! -r "$results" ]; then
		fail "kunit: no results at $results"
		return
	fi
	sed "s/^/$KTAP_INDENT    /" "$results"
	suite=$(tail -n 1 "$results")
	case "$suite" in
	"ok 1 $MODULE") pass "kunit: suite $MODULE" ;;
	*) fail "kunit: suite $MODULE: '$suite'" ;;
	esac
}
