#!/usr/bin/env bash
# Host-side checks of the series and the harness: checkpatch --strict and a
# mail header git accepts on every patch, shellcheck on every script. Prints
# TAP lines and "lint: N passed, N failed"; exits 1 on any failure.
# Needs the extracted tree (scripts/prepare-tree.sh) for checkpatch.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

n=0 passed=0 failed=0
pass() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

series_patches() { grep -v '^\s*\(#\|$\)' "$REPO_DIR/series"; }

check_checkpatch() {
	local patch=$1 out
	out=$(cd "$TREE_DIR" && ./scripts/checkpatch.pl --strict --quiet \
		"$REPO_DIR/patches/$patch" 2>&1) || true
	if [ -z "$out" ]; then
		pass "checkpatch --strict: $patch"
	else
		fail "checkpatch --strict: $patch"
		printf '%s\n' "$out" | sed 's/^/    # /'
	fi
}

# git mailinfo is what git am uses to split a mail into author, subject
# and message; the sign-off must match the author.
check_header() {
	local patch=$1 info author sob
	info=$(git mailinfo /dev/null /dev/null <"$REPO_DIR/patches/$patch")
	author=$(sed -n 's/^Author: //p' <<<"$info")
	sob=$(sed -n 's/^Signed-off-by: \(.*\) <.*/\1/p' "$REPO_DIR/patches/$patch" | head -n 1)
	if grep -q '^Subject: .\+' <<<"$info" && [ -n "$author" ] &&
		[ "$author" = "$sob" ] && grep -q '^Date: ' <<<"$info"; then
		pass "mail header (From, Date, Subject, Signed-off-by): $patch"
	else
		fail "mail header of $patch: author='$author' sign-off='$sob'"
	fi
}

check_shellcheck() {
	local scripts
	mapfile -t scripts < <(cd "$REPO_DIR" && { ls scripts/*.sh test-rootfs/*.sh; \
		ls bench/*.sh; echo bench/stock-initramfs-init; echo run-qemu.sh; echo check.sh; \
		echo test-rootfs/init; echo .ci/run; } |
		while read -r f; do [ -f "$f" ] && echo "$f"; done)
	if (cd "$REPO_DIR" && shellcheck -x "${scripts[@]}"); then
		pass "shellcheck: ${#scripts[@]} scripts"
	else
		fail "shellcheck"
	fi
}

stage "lint: checkpatch, mail headers, shellcheck"
while read -r patch; do
	check_checkpatch "$patch"
	check_header "$patch"
done < <(series_patches)
check_shellcheck

echo "lint: $passed passed, $failed failed"
((failed == 0))
