#!/usr/bin/env bash
# Proves that the suite's verdict can fail: the KTAP parser on documents
# with every known way of coming out green while broken, the guest runner
# on deliberately broken checks, and the retry rule on consoles of a stalled
# and of a crashed first boot. Prints one KTAP document; needs no root, no
# kernel tree and no guest.
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(dirname "$TESTS_DIR")
# shellcheck source=scripts/lib.sh
. "$REPO_DIR/scripts/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"
PARSE=("python3" "$REPO_DIR/scripts/ktap-parse.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The runner's checks: name and the parser's verdict on it ("" = passes)
RUNNER_CASES=(
	"good:"
	"fails:a comparison: got '1', want '2'"
	"returns_early:returned status 3"
	"reports_nothing:printed no result"
	"prints_nothing:printed no result"
	"exits:ended without returning"
	"unset:ended without returning"
	"misspelt:unknown check"
)
mapfile -t FIXTURES < <(cd "$TESTS_DIR/ktap" && ls -- *.ktap)
ktap_begin "$((${#FIXTURES[@]} + ${#RUNNER_CASES[@]} + 5))"

# A fixture named pass-* must be judged green, fail-* red and for the
# reason its "# reason:" line gives; its first line may name the
# registry's list ("# registry: a,b").
for fixture in "${FIXTURES[@]}"; do
	file=$TESTS_DIR/ktap/$fixture
	registry=$(sed -n '1s/^# registry: *//p' "$file")
	reason=$(sed -n 's/^# reason: //p' "$file")
	rc=0
	"${PARSE[@]}" --name fixture ${registry:+--expect "$registry"} "$file" >"$work/out" || rc=$?
	case "$fixture" in
	pass-*) want=0 ;;
	*) want=1 ;;
	esac
	if ((rc != want)); then
		ktap_not_ok "parser: $fixture" "exit $rc, want $want: $(tail -n 1 "$work/out")"
	elif ((want)) && ! grep -q '^not ok - ' "$work/out"; then
		ktap_not_ok "parser: $fixture" "red without a failure line"
	elif ((want)) && ! grep -qF -- "$reason" "$work/out"; then
		ktap_not_ok "parser: $fixture" "red, but not for '$reason'"
	else
		ktap_ok "parser: $fixture judged $( ((want)) && echo "red (${reason:-?})" || echo green)"
	fi
done

# The guest runner, run here on checks that go wrong in every way.
mkdir -p "$work/pc/checks"
cp "$REPO_DIR/lib/ktap.sh" "$REPO_DIR/guest/lib.sh" "$REPO_DIR/guest/run-checks.sh" "$work/pc/"
cp "$TESTS_DIR/runner/checks.sh" "$work/pc/checks/"
names=$(printf '%s\n' "${RUNNER_CASES[@]}" | cut -d: -f1 | paste -sd,)
rc=0
PC_CHECKS=$names bash "$work/pc/run-checks.sh" >"$work/runner.ktap" 2>/dev/null || rc=$?
"${PARSE[@]}" --name runner --expect "$names" "$work/runner.ktap" >"$work/runner.out" || true
for case in "${RUNNER_CASES[@]}"; do
	name=${case%%:*} want=${case#*:}
	got=$(grep -F "not ok - runner: runner/$name" "$work/runner.out" || true)
	if [ -z "$want" ] && [ -z "$got" ]; then
		ktap_ok "runner: check '$name' passes"
	elif [ -n "$want" ] && [[ $got == *"$want"* ]]; then
		ktap_ok "runner: check '$name' fails ($want)"
	else
		ktap_not_ok "runner: check '$name'" "parser said '${got:-nothing}', want '${want:-nothing}'"
	fi
done
if ((rc != 0)); then
	ktap_ok "runner: exits non-zero when a check failed ($rc)"
else
	ktap_not_ok "runner: exit status" "0 with failing checks"
fi
rc=0
PC_CHECKS="" bash "$work/pc/run-checks.sh" >"$work/empty.ktap" 2>/dev/null || rc=$?
if ((rc != 0)) && ! "${PARSE[@]}" --name empty "$work/empty.ktap" >/dev/null; then
	ktap_ok "runner: no checks named is a failure"
else
	ktap_not_ok "runner: no checks named" "exit $rc, or the parser took it as green"
fi
if ! (. "$REPO_DIR/guest/lib.sh" && in_test_guest); then
	ktap_ok "runner: the real reset refuses to run outside a test guest"
else
	ktap_not_ok "runner: in_test_guest is true on the host"
fi

# The retry rule: a stall that scripts/known-stalls names is retried, a
# crashed boot is not (and its splat is found).
if sig=$(known_stall "$TESTS_DIR/boot/stall-acpi.log"); then
	ktap_ok "retry: the ACPI loop stall is a known stall ($sig)"
else
	ktap_not_ok "retry: the ACPI loop stall is not recognised"
fi
if ! known_stall "$TESTS_DIR/boot/crash-first-boot.log" >/dev/null &&
	! "$REPO_DIR/scripts/scan-console.sh" "$TESTS_DIR/boot/crash-first-boot.log" >/dev/null; then
	ktap_ok "retry: a first boot that crashed is not retried, and its splat is found"
else
	ktap_not_ok "retry: a crashed first boot" "taken for a known stall, or its splat missed"
fi
ktap_end
((KTAP_FAILED == 0))
