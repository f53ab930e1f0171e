#!/bin/bash
# The guest's test runner, started by the test init inside QEMU. It runs
# the checks named by pc.checks= (in PC_CHECKS, comma-separated: the host
# takes the list from guest/boots) and prints one KTAP document:
#
#   - the plan first, from that list, before anything runs;
#   - each check a subtest, started from a reset state (reset_state in
#     lib.sh), run in a subshell so that nothing it sets or leaves behind
#     reaches the next one;
#   - a check's result is "not ok" when any of its results is, when it
#     printed no result, when it returned non-zero, or when it ended
#     without getting back here (an exit); an unknown name is "not ok" too.
#     (Its results are counted as they are written; one whose line went
#     elsewhere leaves an empty subtest under "ok", which the host's parser
#     fails.)
#
# The last line is "guest: N passed, N failed" (its own count, for people:
# the host counts from the KTAP). Exits non-zero on any failure.
set -u
PC_DIR=${PC_DIR:-$(cd "$(dirname "$0")" && pwd)}
# shellcheck source=lib/ktap.sh
. "$PC_DIR/ktap.sh"
# shellcheck source=guest/lib.sh
. "$PC_DIR/lib.sh"
for f in "$PC_DIR"/checks/*.sh; do
	# shellcheck source=/dev/null
	. "$f"
done

# Checks that must start with the module not loaded: the refusals, and the
# end-of-boot checks (kmemleak scans with the module gone; the health check
# runs in boots where the module cannot load).
declare -A NO_MODULE=([probe_refused_vendor]=1 [probe_refused_arat]=1 [kmemleak]=1 [health]=1)

# run_check NAME: one subtest; prints its parent result line
run_check() {
	local name=$1 counts=/tmp/ktap-counts.$1 n p f s rc t0
	if ! declare -F "check_$name" >/dev/null; then
		GUEST_FAILED=$((GUEST_FAILED + 1))
		ktap_not_ok "$name" "unknown check"
		return
	fi
	KTAP_INDENT="    " ktap_subtest_header "$name"
	rm -f "$counts"
	t0=$SECONDS
	(
		# shellcheck disable=SC2030  # the counters are the subtest's own
		KTAP_INDENT="    " KTAP_N=0 KTAP_PASSED=0 KTAP_FAILED=0 KTAP_SKIPPED=0
		# (not in a command substitution: the reset sets CDEV for the check)
		if reset_state "$((1 - ${NO_MODULE[$name]:-0}))" >/tmp/reset.why; then
			"check_$name"
			rc=$?
			stop_loads
		else
			ktap_not_ok "reset before $name: $(cat /tmp/reset.why)"
			rc=0
		fi
		echo "$KTAP_N $KTAP_PASSED $KTAP_FAILED $KTAP_SKIPPED $rc" >"$counts"
	)
	if ! read -r n p f s rc 2>/dev/null <"$counts"; then
		GUEST_FAILED=$((GUEST_FAILED + 1))
		ktap_not_ok "$name" "ended without returning (exit in the check?)"
		return
	fi
	GUEST_PASSED=$((GUEST_PASSED + p))
	GUEST_FAILED=$((GUEST_FAILED + f))
	KTAP_INDENT="    " ktap_diag "$name: $p passed, $f failed, $s skipped in $((SECONDS - t0)) s"
	if ((f > 0)); then
		ktap_not_ok "$name"
	elif ((rc != 0)); then
		GUEST_FAILED=$((GUEST_FAILED + 1))
		ktap_not_ok "$name" "returned status $rc"
	elif ((n == 0)); then
		GUEST_FAILED=$((GUEST_FAILED + 1))
		ktap_not_ok "$name" "printed no result"
	elif ((s == n)); then
		ktap_skip "$name" "every result skipped"
	else
		ktap_ok "$name"
	fi
}

IFS=, read -r -a CHECKS <<<"${PC_CHECKS:-}"
GUEST_PASSED=0
GUEST_FAILED=0

ktap_begin "$((${#CHECKS[@]} ? ${#CHECKS[@]} : 1))"
ktap_diag "$(uname -r), $NCPU CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
if ((${#CHECKS[@]} == 0)); then
	GUEST_FAILED=1
	ktap_not_ok "no checks named (pc.checks= is empty)"
fi
# Forget leaks suspected before the checks, so the last scan is about them.
[ -w /sys/kernel/debug/kmemleak ] && echo clear >/sys/kernel/debug/kmemleak
for c in "${CHECKS[@]}"; do
	run_check "$c"
done
ktap_end
echo "guest: $GUEST_PASSED passed, $GUEST_FAILED failed"
# shellcheck disable=SC2031  # this level's counter, not a subtest's
((KTAP_FAILED == 0))
