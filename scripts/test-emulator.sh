#!/usr/bin/env bash
# The emulated-package QEMU's own checks, after scripts/build-emulator.sh:
# QEMU's checkpatch and a mail header git accepts on every patch of
# emulator/series, the unit tests of the power and thermal model
# (emulator/tests/test-pkg-power.c, built against the patched source), and
# the built binary's handling of the model's parameters.
# Prints one KTAP document, the unit tests nested as a subtest; exits 1
# on any failure.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/test-emulator.sh

The emulated-package QEMU's own checks, after scripts/build-emulator.sh:
QEMU's checkpatch and a mail header git accepts on every patch of
emulator/series, the unit tests of the power and thermal model, and the
built binary's handling of the model's parameters. Prints one KTAP
document; exits 1 on any failure. Takes no arguments.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"

SRC_DIR=$EMULATOR_DIR/src
TESTS=$REPO_DIR/emulator/tests
[ -d "$SRC_DIR/target/i386" ] || die "no patched qemu source in $SRC_DIR (run scripts/build-emulator.sh)"
mapfile -t PATCHES < <(grep -v '^\s*\(#\|$\)' "$REPO_DIR/emulator/series")

check_style() {
	local patch=$1 out
	if out=$(cd "$SRC_DIR" && ./scripts/checkpatch.pl "$REPO_DIR/emulator/patches/$patch" 2>&1); then
		ktap_ok "qemu checkpatch: $patch"
	else
		ktap_not_ok "qemu checkpatch: $patch"
		while IFS= read -r l; do ktap_diag "    $l"; done <<<"$out"
	fi
}

check_header() {
	local problem
	problem=$(mail_header_problem "$REPO_DIR/emulator/patches/$1")
	if [ -z "$problem" ]; then
		ktap_ok "mail header (From, Date, Subject, Signed-off-by): $1"
	else
		ktap_not_ok "mail header of $1: $problem"
	fi
}

# The model's arithmetic on its own, with a stand-in for qemu/osdep.h
check_unit_tests() {
	local bin=$EMULATOR_DIR/test-pkg-power out rc=0
	if ! out=$(gcc -std=gnu11 -Wall -Wextra -Werror -O2 -I "$TESTS/stub" \
		-I "$SRC_DIR/target/i386" -o "$bin" "$TESTS/test-pkg-power.c" \
		"$SRC_DIR/target/i386/tcg/sysemu/pkg-power.c" -lm 2>&1); then
		ktap_not_ok "power and thermal model unit tests" "do not build"
		while IFS= read -r l; do ktap_diag "    $l"; done <<<"$out"
		return
	fi
	"$bin" | sed 's/^/    /' || rc=${PIPESTATUS[0]}
	if ((rc == 0)); then
		ktap_ok "power and thermal model unit tests"
	else
		ktap_not_ok "power and thermal model unit tests" "exit $rc"
	fi
}

# qemu_start CPU: start the built QEMU with that -cpu, stopped, and quit
# at once from its monitor; prints what QEMU printed, fails as QEMU does
qemu_start() {
	printf 'quit\n' | timeout 60 "$EMULATOR_BIN" -machine q35 -accel tcg \
		-cpu "$1" -display none -nodefaults -S -monitor stdio 2>&1 |
		grep -v "TCG doesn't support requested feature"
	return "${PIPESTATUS[1]}"
}

# The model starts with its defaults, and a parameter out of range stops
# QEMU at start with a message naming it.
check_parameters() {
	local out rc=0
	out=$(qemu_start Skylake-Client,pkg-model=on) || rc=$?
	if ((rc == 0)); then
		ktap_ok "QEMU starts with pkg-model=on and its defaults"
	else
		ktap_not_ok "QEMU starts with pkg-model=on and its defaults" "exit $rc: $out"
	fi
	rc=0
	out=$(qemu_start Skylake-Client,pkg-model=on,pkg-tjmax=200) || rc=$?
	if ((rc != 0)) && grep -q 'pkg-tjmax must be within 61..127' <<<"$out"; then
		ktap_ok "pkg-tjmax=200 refused at start, by name"
	else
		ktap_not_ok "pkg-tjmax=200 refused at start, by name" "exit $rc: $out"
	fi
}

ktap_begin "$((2 * ${#PATCHES[@]} + 3))"
for patch in "${PATCHES[@]}"; do
	check_style "$patch"
	check_header "$patch"
done
check_unit_tests
check_parameters
ktap_end
((KTAP_FAILED == 0))
