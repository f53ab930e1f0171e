#!/usr/bin/env bash
# Proves that the suite's plan cannot shrink unseen: plan_problem
# (scripts/lib.sh), which scripts/test.sh and scripts/check.sh call before
# anything is built, on the real registries and on copies of guest/boots
# with a boot, a check or the floor taken out, emptied or missing.
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
	"no-isolated-boot:7 boots, below the floor of 8"
	"isolated-without-checks:boot isolated names no check"
	"no-soak:57 checks, below the floor of 58"
	"no-floor:no floor line"
)
: >"$work/empty"
awk '$1 == "boot" { skip = ($2 == "isolated") } !skip' "$real" >"$work/no-isolated-boot"
awk '$1 == "boot" { on = ($2 == "isolated"); print; next }
	on && !/^[ \t]*(#|$)/ { next } { print }' "$real" >"$work/isolated-without-checks"
sed 's/ soak$//' "$real" >"$work/no-soak"
grep -v '^floor ' "$real" >"$work/no-floor"

ktap_begin "$((2 + ${#BROKEN[@]}))"
for reg in "$real" "$REPO_DIR/guest/boots-trees"; do
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

ktap_end
((KTAP_FAILED == 0))
