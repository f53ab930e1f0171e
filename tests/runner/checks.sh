# Checks for running guest/run-checks.sh on the host (tests/selftest-harness.sh):
# one good check and one of each way a check can go wrong. Sourced by the
# runner after guest/lib.sh, so the reset below replaces the real one,
# which must never run outside a test guest.
# shellcheck shell=bash
# shellcheck disable=SC2154  # check_unset reads an unset variable on purpose

reset_state() { :; }

check_good() { pass "a value read back"; expect "a comparison" 1 1; }
check_fails() { expect "a comparison" 1 2; }
check_returns_early() { return 3; }
check_reports_nothing() { :; }
# counted by the writer, but its line went elsewhere: the document shows none
check_prints_nothing() { pass "a result sent elsewhere" >/dev/null; }
check_exits() { pass "one result"; exit 0; }
check_unset() { pass "one result"; echo "$no_such_variable"; pass "never here"; }
