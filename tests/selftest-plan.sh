#!/usr/bin/env bash
# Proves that the suite's plan cannot shrink unseen: plan_problem
# (scripts/lib.sh), which scripts/test.sh and scripts/check.sh call before
# anything is built, on the real registries and on copies of guest/boots
# with a boot, a check or the floor taken out, emptied or missing; and
# tests/run.sh's floor of self-tests on a copy of it with one too few.
# Prints one KTAP document; needs no root, no kernel and no guest.
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
. "$TESTS_DIR/../scripts/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
real=$REPO_DIR/guest/boots

# Broken registries, made from the real one: name, then what plan_problem
# must say. Each file is $work/NAME.
BROKEN=(
	"missing:no registry of boots at"
	"empty:declares no boot"
	"no-isolated-boot:9 boots, below the floor of 10"
	"isolated-without-checks:boot isolated names no check"
	"no-soak:69 checks, below the floor of 70"
	"no-floor:no floor line"
)
: >"$work/empty"
awk '$1 == "boot" { skip = ($2 == "isolated") } !skip' "$real" >"$work/no-isolated-boot"
awk '$1 == "boot" { on = ($2 == "isolated"); print; next }
	on && !/^[ \t]*(#|$)/ { next } { print }' "$real" >"$work/isolated-without-checks"
sed 's/ soak$//' "$real" >"$work/no-soak"
grep -v '^floor ' "$real" >"$work/no-floor"

ktap_begin "$((4 + ${#BROKEN[@]} + 3))"
for reg in "$real" "$REPO_DIR/guest/boots-trees" "$REPO_DIR/guest/boots-debug" "$REPO_DIR/guest/boots-rt"; do
	rc=0
	why=$(BOOTS=$reg plan_problem) || rc=$?
	if ((rc == 0)) && [ -z "$why" ]; then
		ktap_ok "plan: ${reg#"$REPO_DIR"/} is a plan ($(BOOTS=$reg boot_names | wc -l) boots)"
	else
		ktap_not_ok "plan: ${reg#"$REPO_DIR"/}" "status $rc: $why"
	fi
done
for case in "${BROKEN[@]}"; do
	name=${case%%:*} want=${case#*:} rc=0
	why=$(BOOTS=$work/$name plan_problem) || rc=$?
	if ((rc != 0)) && [[ $why == *"$want"* && $why != *$'\n'* ]]; then
		ktap_ok "plan: a registry '$name' is refused ($why)"
	else
		ktap_not_ok "plan: a registry '$name'" "status $rc, said '$why', want '$want' in one line"
	fi
done

# A setting given more than once (append=) reaches the command line whole:
# every value, joined by spaces, on one line.
printf 'floor boots=1 checks=1\nboot two kernel=test append=a=1 append=b smp=1\n\tx\n' >"$work/two-appends"
got=$(BOOTS=$work/two-appends boot_field two append)
if [ "$got" = "a=1 b" ]; then
	ktap_ok "plan: two append= settings give 'a=1 b'"
else
	ktap_not_ok "plan: two append= settings" "gave '$got', want 'a=1 b'"
fi

# tests/run.sh's floor: a copy of it beside one self-test fewer than its
# floor, then beside as many, each a stand-in with one passing result.
floor=$(sed -n 's/^SELFTESTS_FLOOR=\([0-9]*\).*/\1/p' "$TESTS_DIR/run.sh")
mkdir -p "$work/repo/tests" "$work/repo/lib"
cp "$REPO_DIR/lib/ktap.sh" "$REPO_DIR/lib/usage.sh" "$work/repo/lib/"
cp "$TESTS_DIR/run.sh" "$work/repo/tests/"
for ((i = 1; i < ${floor:-0}; i++)); do
	printf 'echo "KTAP version 1"; echo 1..1; echo "ok 1 stand-in"\n' >"$work/repo/tests/selftest-$i.sh"
done
rc=0
bash "$work/repo/tests/run.sh" >"$work/fewer.ktap" 2>&1 || rc=$?
if [ -n "$floor" ] && ((rc != 0)) && grep -q "^not ok .*below the floor of $floor" "$work/fewer.ktap"; then
	ktap_ok "run.sh: $((floor - 1)) self-tests, one below its floor of $floor, fail it"
else
	ktap_not_ok "run.sh: one self-test below the floor" "floor '$floor', exit $rc"
	sed 's/^/# /' "$work/fewer.ktap"
fi
cp "$work/repo/tests/selftest-1.sh" "$work/repo/tests/selftest-$floor.sh" 2>/dev/null || true
rc=0
bash "$work/repo/tests/run.sh" >"$work/enough.ktap" 2>&1 || rc=$?
if [ -n "$floor" ] && ((rc == 0)) && python3 "$REPO_DIR/scripts/ktap-parse.py" "$work/enough.ktap" >/dev/null; then
	ktap_ok "run.sh: $floor self-tests, its floor, pass"
else
	ktap_not_ok "run.sh: self-tests at the floor" "floor '$floor', exit $rc"
	sed 's/^/# /' "$work/enough.ktap"
fi
ktap_end
((KTAP_FAILED == 0))
