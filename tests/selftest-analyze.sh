#!/usr/bin/env bash
# Proves that scripts/analyze-driver.sh reports a driver that does not
# build as a failure in its KTAP (it used to exit through die with no "not
# ok" line, and its status was dropped): run against a stand-in tree with a
# make that fails, and one that succeeds. Needs no kernel tree.
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(dirname "$TESTS_DIR")
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tree=$work/cache/linux
mkdir -p "$tree/drivers/thermal/intel" "$tree/scripts" \
	"$tree/Documentation/driver-api/thermal" "$work/bin"
touch "$tree/drivers/thermal/intel/intel_powerclamp.c" \
	"$tree/drivers/thermal/intel/intel_powerclamp.h" \
	"$tree/drivers/thermal/intel/intel_powerclamp_test.c"
printf '#!/bin/sh\nexit 0\n' >"$tree/scripts/kernel-doc"
printf 'Title\n=====\n\nText.\n' >"$tree/Documentation/driver-api/thermal/intel_powerclamp.rst"
chmod +x "$tree/scripts/kernel-doc"

# analyze WITH_MAKE_STATUS: run the script with a make that exits so
analyze() {
	printf '#!/bin/sh\n[ "%s" = 0 ] || echo "intel_powerclamp.c:1:1: error: expected declaration" >&2\nexit %s\n' \
		"$1" "$1" >"$work/bin/make"
	chmod +x "$work/bin/make"
	PATH=$work/bin:$PATH POWERCLAMP_CACHE=$work/cache \
		"$REPO_DIR/scripts/analyze-driver.sh" >"$work/out" 2>&1
}

ktap_begin 2
rc=0
analyze 2 || rc=$?
if ((rc != 0)) && ! python3 "$REPO_DIR/scripts/ktap-parse.py" --name analysis "$work/out" \
	>"$work/parsed" && grep -q 'does not build' "$work/parsed"; then
	ktap_ok "analysis: a driver that does not build is a failure in the KTAP (exit $rc)"
else
	ktap_not_ok "analysis: a driver that does not build" "exit $rc: $(tail -n 1 "$work/parsed" 2>/dev/null)"
fi
rc=0
analyze 0 || rc=$?
if ((rc == 0)) && python3 "$REPO_DIR/scripts/ktap-parse.py" --name analysis "$work/out" >/dev/null; then
	ktap_ok "analysis: a clean build of the stand-in tree is green"
else
	ktap_not_ok "analysis: a clean stand-in build" "exit $rc"
	sed 's/^/# /' "$work/out"
fi
ktap_end
((KTAP_FAILED == 0))
