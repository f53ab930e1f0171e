#!/usr/bin/env bash
# The red runs again: each break of tests/breaks/ (a diff that breaks the
# 6.1 driver on purpose) applied for one run of the check its "Usage:" line
# names, through scripts/check.sh --break, and that check must fail. A check
# that stopped failing against its break can no longer catch the defect it
# was written for. Prints one KTAP document, one result per break, then
# "breaks: N passed, N failed"; exits 1 on any failure.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --ci ARGS -- "$@" <<'EOF'
usage: scripts/breaks.sh [--ci] [DIFF...]

Runs each break of tests/breaks/ (or only the DIFFs named) with the check
its "Usage:" line names (scripts/check.sh --break DIFF CHECK) and expects
that check red: verdict 1 (checks failed) or 2 (a kernel splat, which some
breaks cause on purpose). A check that passes against its break is a
failure. A break whose "Usage:" needs more than check.sh (a noisy host) is
reported as skipped.

  --ci   only the breaks marked "In CI: yes" in their header: a driver
         rebuild and one short check each (the suite runs these)

Needs a machine the suite has set up once, like check.sh; takes the
cache's lock (shared with the suite when it runs this).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"

CI_ONLY=0
if [ "${1:-}" = --ci ]; then
	CI_ONLY=1
	shift
fi
if (($#)); then
	BREAKS=()
	for d in "$@"; do
		[ -r "$d" ] || die "no break at '$d'"
		BREAKS+=("$(realpath "$d")")
	done
else
	BREAKS=("$REPO_DIR"/tests/breaks/*.diff)
	[ -e "${BREAKS[0]}" ] || die "no break in tests/breaks/"
fi
if ((CI_ONLY)); then
	mapfile -t BREAKS < <(grep -l '^In CI: yes' "${BREAKS[@]}" || true)
	((${#BREAKS[@]})) || die "no break is marked 'In CI: yes'"
fi

# check.sh takes the cache's lock; this script holds it for the checks it
# runs (sharing the suite's when the suite runs it)
take_lock
export PC_LOCK_HOLDER=$$

# break_check DIFF: the check named on DIFF's "Usage:" line, empty when that
# line is not a plain check.sh --break run
break_check() {
	sed -n 's|^Usage: scripts/check.sh --break tests/breaks/[^ ]*\.diff \([a-z0-9_,]*\)$|\1|p' "$1"
}

stage "breaks: ${#BREAKS[@]} checks run red against their broken driver"
ktap_begin "${#BREAKS[@]}"
for diff in "${BREAKS[@]}"; do
	name=${diff#"$REPO_DIR"/}
	check=$(break_check "$diff")
	if [ -z "$check" ]; then
		ktap_skip "$name" "$(sed -n 's/^Usage: //p' "$diff" | head -1) (not a plain check.sh run)"
		continue
	fi
	log=$LOG_DIR/break-$(basename "$diff" .diff).log
	t0=$SECONDS
	status=0
	"$REPO_DIR/scripts/check.sh" --break "$diff" "$check" >"$log" 2>&1 || status=$?
	# the guest's verdict as check.sh prints it: its exit status alone
	# does not tell a red check (1) from a check.sh that died (also 1)
	verdict=$(sed -n 's/^check\.sh: .* verdict \([0-9]\) in [0-9]* s .*/\1/p' "$log" | tail -1)
	ktap_diag "$name: $check, verdict ${verdict:-none} (exit $status) in $((SECONDS - t0)) s, log $log"
	# the check's failed assertions, for the record (none when it passed)
	{ grep -a '^ *not ok [0-9]' "$log" || true; } | { grep -av '^not ok' || true; } |
		head -4 | while read -r line; do ktap_diag "    $line"; done
	case $verdict in
	1 | 2) ktap_ok "$name: $check red against the break (verdict $verdict)" ;;
	0) ktap_not_ok "$name: $check passed against the break" ;;
	*) ktap_not_ok "$name: check.sh did not run $check (exit $status)" ;;
	esac
done
ktap_end

echo "breaks: $KTAP_PASSED passed, $KTAP_FAILED failed"
((KTAP_FAILED == 0))
