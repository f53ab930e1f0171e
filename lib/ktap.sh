# shellcheck shell=bash
# KTAP version 1 output (Documentation/dev-tools/ktap.rst), shared by the
# host scripts and the guest checks. Sourced, never run; bash only.
#
# A document is opened with its plan, printed before any result, from the
# list of what is going to run:
#
#	ktap_begin 3
#	ktap_ok "first"
#	ktap_not_ok "second" "got 2, want 1"
#	ktap_skip "third" "no kmemleak in this kernel"
#	ktap_end		# prints "P passed, F failed, S skipped" as a diagnostic
#
# Results are numbered here, so a caller cannot get the numbering wrong. A
# subtest is the same calls with KTAP_INDENT set to four more spaces (the
# guest runner does that for each check). Whoever reads the document
# (scripts/ktap-parse.py) compares the plan with the results it finds; the
# counters below are for the writer's own summary line only.
# shellcheck disable=SC2034  # KTAP_* are read by the scripts that source this

KTAP_INDENT=${KTAP_INDENT:-}
KTAP_N=0
KTAP_PASSED=0
KTAP_FAILED=0
KTAP_SKIPPED=0

# ktap_begin COUNT: the version line and the plan
ktap_begin() {
	printf '%sKTAP version 1\n%s1..%d\n' "$KTAP_INDENT" "$KTAP_INDENT" "$1"
}

# ktap_subtest_header NAME: what opens a subtest, before its own results
ktap_subtest_header() {
	printf '%sKTAP version 1\n%s# Subtest: %s\n' "$KTAP_INDENT" "$KTAP_INDENT" "$1"
}

# A description may not contain '#' (it starts the directive): replaced.
ktap_line() {
	local status=$1 desc=${2//#/no.}
	KTAP_N=$((KTAP_N + 1))
	printf '%s%s %d %s%s\n' "$KTAP_INDENT" "$status" "$KTAP_N" "$desc" "${3:+ # $3}"
}

# ktap_ok DESCRIPTION
ktap_ok() { KTAP_PASSED=$((KTAP_PASSED + 1)); ktap_line ok "$1"; }

# ktap_not_ok DESCRIPTION [REASON]: the reason goes after the '#'
ktap_not_ok() { KTAP_FAILED=$((KTAP_FAILED + 1)); ktap_line "not ok" "$1" "${2:-}"; }

# ktap_skip DESCRIPTION REASON
ktap_skip() { KTAP_SKIPPED=$((KTAP_SKIPPED + 1)); ktap_line ok "$1" "SKIP $2"; }

# ktap_diag TEXT...: a diagnostic line, for people; never parsed as a result
ktap_diag() { printf '%s# %s\n' "$KTAP_INDENT" "$*"; }

# ktap_end: the writer's own totals, as a diagnostic line
ktap_end() {
	ktap_diag "$KTAP_PASSED passed, $KTAP_FAILED failed, $KTAP_SKIPPED skipped"
}
