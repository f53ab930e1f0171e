#!/usr/bin/env bash
# usage: tests/selftest-console.sh
#
# Self-test of scripts/scan-console.sh on the console logs in
# tests/console/, from any directory, without root or a kernel tree:
#
#   splat-KIND.log  must exit 1 and report, among its matching lines, the
#                   fixture's splat line: the first line containing the text
#                   SPLAT_LINE[KIND] below (the scanner prints matching lines
#                   as "    LINE:TEXT"). Only exiting 1 is not enough: the
#                   context it prints after the first match would quote the
#                   line even if no pattern matched it;
#   clean-*.log     must exit 0;
#
# and a log that is missing, a directory, unreadable, or not given at all
# must exit 2 (and there must be fixtures of both kinds). Prints one KTAP
# document, exits 1 if any case failed.
# shellcheck disable=SC2317  # the case_* functions are called as "case_$c"
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$TESTS_DIR/.." && pwd)
SCAN=$REPO_DIR/scripts/scan-console.sh
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"

# What identifies the splat line of each splat-KIND.log: fixed text, chosen
# from the kernel's message, not from the scanner's patterns.
declare -A SPLAT_LINE=(
	[warning]='WARNING: CPU: 1 PID: 312 at drivers/thermal'
	[bug-null-deref]='BUG: kernel NULL pointer dereference'
	[oops]='Oops: 0002 [#1]'
	[panic]='Kernel panic - not syncing: Attempted to kill init!'
	[gpf]='general protection fault, probably for non-canonical address'
	[invalid-opcode]='invalid opcode: 0000 [#1]'
	[lockdep-circular]='possible circular locking dependency detected'
	[lockdep-recursive]='possible recursive locking detected'
	[inconsistent-lock]='inconsistent lock state'
	[suspicious-rcu]='suspicious RCU usage'
	[kasan]='BUG: KASAN: use-after-free in'
	[ubsan]='UBSAN: shift-out-of-bounds in'
	[kmemleak]='unreferenced object 0x'
	[kmemleak-scan]='new suspected memory leaks'
	[rcu-stall]='rcu_sched detected stalls on CPUs/tasks'
	[rcu-expedited-stall]='rcu_sched detected expedited stalls on CPUs/tasks'
	[hung-task]='blocked for more than 61 seconds'
	[soft-lockup]='soft lockup - CPU#1 stuck for'
	[hard-lockup]='Watchdog detected hard LOCKUP on cpu'
	[odebug]='ODEBUG: free active'
	[list-corruption]='list_del corruption'
	[rt-throttling]='sched: RT throttling activated'
	[kernel-bug-at]='kernel BUG at drivers/thermal'
	[refcount]='refcount_t: underflow; use-after-free.'
	[stack-protector]='stack-protector: Kernel stack is corrupted in'
	[workqueue-lockup]='BUG: workqueue lockup'
	[mid-line]='BUG: kernel NULL pointer dereference'
)

# Cases on the usage rather than a fixture: case_NAME below.
EXTRA=(fixtures missing directory unreadable no_argument)

shopt -s nullglob
FIXTURES=("$TESTS_DIR"/console/*.log)
shopt -u nullglob

# scan ARGS...: run the scanner; sets out (stdout and stderr) and rc
scan() {
	rc=0
	out=$("$SCAN" "$@" 2>&1) || rc=$?
}

# diag_output: the scanner's output, as diagnostics
diag_output() {
	local l
	while IFS= read -r l; do
		ktap_diag "    $l"
	done <<<"$out"
}

check_fixture() {
	local f=$1 name=${1##*/} kind marker hit num
	case "$name" in
	splat-*.log)
		kind=${name#splat-}
		kind=${kind%.log}
		marker=${SPLAT_LINE[$kind]:-}
		if [ -z "$marker" ]; then
			ktap_not_ok "$name: no SPLAT_LINE entry for '$kind' in $(basename "$0")"
			return
		fi
		if ! hit=$(grep -n -F -m 1 -- "$marker" "$f"); then
			ktap_not_ok "$name: no line contains '$marker'"
			return
		fi
		num=${hit%%:*}
		scan "$f"
		if ((rc != 1)); then
			ktap_not_ok "$name: exit $rc, want 1"
			diag_output
		elif ! grep -q -x -F -- "    $hit" <<<"$out"; then
			ktap_not_ok "$name: exit 1, but line $num was not reported as a match"
			ktap_diag "line $num: ${hit#*:}"
			diag_output
		else
			ktap_ok "$name: exit 1, line $num reported"
		fi
		;;
	clean-*.log)
		scan "$f"
		if ((rc == 0)); then
			ktap_ok "$name: exit 0"
		else
			ktap_not_ok "$name: exit $rc, want 0"
			diag_output
		fi
		;;
	*)
		ktap_not_ok "$name: neither splat-KIND.log nor clean-NAME.log"
		;;
	esac
}

# expect_usage_error DESCRIPTION ARGS...: the scanner must exit 2
expect_usage_error() {
	local desc=$1
	shift
	scan "$@"
	if ((rc == 2)); then
		ktap_ok "$desc: exit 2"
	else
		ktap_not_ok "$desc: exit $rc, want 2"
		diag_output
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case_fixtures() {
	local n_splat=0 n_clean=0 f
	for f in "${FIXTURES[@]}"; do
		case "${f##*/}" in
		splat-*) n_splat=$((n_splat + 1)) ;;
		clean-*) n_clean=$((n_clean + 1)) ;;
		esac
	done
	if ((n_splat > 0 && n_clean > 0)); then
		ktap_ok "fixtures: $n_splat splat logs, $n_clean clean logs"
	else
		ktap_not_ok "fixtures: $n_splat splat logs, $n_clean clean logs in $TESTS_DIR/console"
	fi
}
case_missing() { expect_usage_error "missing log" "$tmp/no-such-console.log"; }
case_directory() { expect_usage_error "a directory for the log" "$tmp"; }
case_no_argument() { expect_usage_error "no log given"; }
case_unreadable() {
	if ((EUID == 0)); then
		ktap_skip "unreadable log" "root can read a mode 000 file"
		return
	fi
	echo '[    1.000000] BUG: kernel NULL pointer dereference' >"$tmp/unreadable.log"
	chmod 000 "$tmp/unreadable.log"
	expect_usage_error "unreadable log" "$tmp/unreadable.log"
}

ktap_begin "$((${#FIXTURES[@]} + ${#EXTRA[@]}))"
ktap_diag "scripts/scan-console.sh on ${#FIXTURES[@]} logs in tests/console"
for f in "${FIXTURES[@]}"; do
	check_fixture "$f"
done
for c in "${EXTRA[@]}"; do
	"case_$c"
done
ktap_end
exit $((KTAP_FAILED > 0))
