#!/usr/bin/env bash
# Host-side checks of the series and the harness: checkpatch --strict and a
# mail header git accepts on every patch, shellcheck on every script, and
# every break of tests/breaks/ still applying. Prints one KTAP document (its
# plan first: two results per patch in series, one for shellcheck, one per
# break), then "lint: N passed, N failed"; exits 1 on any failure. Needs
# the patched tree (scripts/prepare-tree.sh) for checkpatch and the breaks.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/lint.sh

Host checks of the series and the harness: checkpatch --strict and a mail
header git accepts on every patch of series, shellcheck on every script,
and every break of tests/breaks/ still applying. Prints one KTAP
document, then "lint: N passed, N failed"; exits 1 on any failure. Needs
the patched tree (scripts/prepare-tree.sh). Takes no arguments; PC_TREE=7.3
(or 6.12) lints that tree's series (trees/TREE/) with its checkpatch.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"

# diag_lines TEXT: TEXT as diagnostics, one line each
diag_lines() {
	local l
	while IFS= read -r l; do
		ktap_diag "    $l"
	done <<<"$1"
}

# (grep exits 1 on a series of comments only: no patch, not an error)
series_patches() { grep -v '^\s*\(#\|$\)' "$SERIES_FILE" || (($? == 1)); }

check_checkpatch() {
	local patch=$1 out
	# The tree is the distro's tarball, without git history: checkpatch
	# then reports every "Fixes:" id as unknown (git_commit_info() has
	# nothing to look it up in), so that one message type is left out.
	out=$(cd "$TREE_DIR" && ./scripts/checkpatch.pl --strict --quiet \
		--ignore UNKNOWN_COMMIT_ID \
		"$PATCHES_DIR/$patch" 2>&1) || true
	if [ -z "$out" ]; then
		ktap_ok "checkpatch --strict: $patch"
	else
		ktap_not_ok "checkpatch --strict: $patch"
		diag_lines "$out"
	fi
}

check_header() {
	local problem
	problem=$(mail_header_problem "$PATCHES_DIR/$1")
	if [ -z "$problem" ]; then
		ktap_ok "mail header (From, Date, Subject, Signed-off-by): $1"
	else
		ktap_not_ok "mail header of $1: $problem"
	fi
}

# Every *.sh under the harness folders (found, so that new files are
# picked up; a folder that does not exist yet is skipped) and at the top,
# plus the scripts without the extension.
list_scripts() {
	local d dirs=()
	for d in lib tests guest scripts test-rootfs bench; do
		[ -d "$REPO_DIR/$d" ] && dirs+=("$d")
	done
	(
		cd "$REPO_DIR"
		{
			((${#dirs[@]} == 0)) || find "${dirs[@]}" -name '*.sh' -type f
			find . -maxdepth 1 -name '*.sh' -type f | sed 's|^\./||'
			for f in bench/stock-initramfs-init test-rootfs/init .ci/run; do
				[ -f "$f" ] && echo "$f"
			done
		} | sort -u
	)
}

check_shellcheck() {
	local scripts out
	mapfile -t scripts < <(list_scripts)
	if ! command -v shellcheck >/dev/null; then
		ktap_not_ok "shellcheck: not installed (scripts/install-deps.sh)"
	elif ((${#scripts[@]} == 0)); then
		ktap_not_ok "shellcheck: no script found"
	elif out=$(cd "$REPO_DIR" && shellcheck -x "${scripts[@]}" 2>&1); then
		ktap_ok "shellcheck: ${#scripts[@]} scripts"
	else
		ktap_not_ok "shellcheck: ${#scripts[@]} scripts"
		diag_lines "$out"
	fi
}

# check_break DIFF: a break of tests/breaks/ still applies to the patched
# tree (scripts/check.sh --break), so that the red runs it stands for can
# be run again after the series moves
check_break() {
	local out
	if out=$(patch -d "$TREE_DIR" -p1 --forward --dry-run -s <"$1" 2>&1); then
		ktap_ok "break applies to the patched tree: ${1#"$REPO_DIR"/}"
	else
		ktap_not_ok "break no longer applies to the patched tree: ${1#"$REPO_DIR"/} (rebase it on the series)"
		diag_lines "$out"
	fi
}

[ -r "$SERIES_FILE" ] || die "no series file at $SERIES_FILE"
mapfile -t PATCHES < <(series_patches)
# The breaks are diffs of the 6.1 driver; a mainline tree (PC_TREE) has its
# own series, linted with its own tree's checkpatch
BREAKS=()
if [ "$PC_TREE" = 6.1 ]; then
	BREAKS=("$REPO_DIR"/tests/breaks/*.diff)
	[ -e "${BREAKS[0]}" ] || BREAKS=()
fi

stage "lint ($PC_TREE): checkpatch, mail headers, shellcheck, breaks"
ktap_begin "$((2 * ${#PATCHES[@]} + 1 + ${#BREAKS[@]}))"
for patch in "${PATCHES[@]}"; do
	check_checkpatch "$patch"
	check_header "$patch"
done
check_shellcheck
for diff in "${BREAKS[@]}"; do
	check_break "$diff"
done
ktap_end

echo "lint: $KTAP_PASSED passed, $KTAP_FAILED failed"
((KTAP_FAILED == 0))
