#!/usr/bin/env bash
# Static checks of the driver in the patched tree: W=1 and sparse (C=2)
# with no warning, kernel-doc with nothing to report, and documentation that
# docutils parses without a warning. Needs a configured build (build-kernel).
# Prints one KTAP document of three results, the plan first, whatever
# happens (a driver that does not build is "not ok" with the compiler's
# output, and the other two still run), then "analyze: N passed, N failed";
# exits 1 on any failure.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: [PC_KERNEL=test|bench|...] scripts/analyze-driver.sh

Static checks of the driver in the patched tree: W=1 and sparse (C=2) with
no warning, kernel-doc with nothing to report, and its documentation parsed
by docutils without a warning. Prints one KTAP document of three results,
then "analyze: N passed, N failed"; exits 1 on any failure. Needs a
configured build (scripts/build-kernel.sh). Takes no arguments.

Environment: PC_KERNEL (whose build, default test), POWERCLAMP_CACHE.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"

DRIVER=drivers/thermal/intel/intel_powerclamp
DOC=Documentation/driver-api/thermal/intel_powerclamp.rst

# diag_lines TEXT: TEXT as diagnostics, one line each
diag_lines() {
	local l
	while IFS= read -r l; do
		ktap_diag "    $l"
	done <<<"$1"
}

# The driver's objects alone (the driver and its KUnit module, which share
# the arithmetic of $DRIVER.h), W=1 and sparse. The touch makes W=1
# recompile them (C=2 runs sparse whether or not they are rebuilt).
check_build() {
	local out rc=0
	out=$(touch "$TREE_DIR/$DRIVER.c" "$TREE_DIR/${DRIVER}_test.c" 2>&1 &&
		make -s -C "$TREE_DIR" O="$OBJ_DIR" CC="ccache gcc" W=1 C=2 \
			"$DRIVER.o" "${DRIVER}_test.o" 2>&1) || rc=$?
	if ((rc != 0)); then
		ktap_not_ok "W=1 and sparse: the driver does not build (exit $rc)"
		diag_lines "$out"
	elif [ -n "$out" ]; then
		ktap_not_ok "W=1 and sparse: warnings on the driver"
		diag_lines "$out"
	else
		ktap_ok "W=1 and sparse: no warnings"
	fi
}

# Sources only: no build needed. kernel-doc -none prints what it finds and
# exits non-zero on errors; either is a failure.
check_kernel_doc() {
	local out rc=0
	out=$("$TREE_DIR/scripts/kernel-doc" -none "$TREE_DIR/$DRIVER.c" \
		"$TREE_DIR/$DRIVER.h" "$TREE_DIR/${DRIVER}_test.c" 2>&1) || rc=$?
	if ((rc != 0)) || [ -n "$out" ]; then
		ktap_not_ok "kernel-doc reports on the driver (exit $rc)"
		diag_lines "$out"
	else
		ktap_ok "kernel-doc: nothing to report"
	fi
}

# docutils stops at its first warning (halt_level 2), which is printed; a
# non-zero exit (a warning, no docutils, no file) or any output is a failure.
check_doc() {
	local out rc=0
	out=$(python3 - "$TREE_DIR/$DOC" 2>&1 <<'PY'
import sys
import docutils.core
import docutils.utils
source = open(sys.argv[1], encoding="utf-8").read()
try:
    docutils.core.publish_doctree(source, source_path=sys.argv[1],
        settings_overrides={"report_level": 2, "halt_level": 2,
                            "warning_stream": sys.stdout})
except docutils.utils.SystemMessage:
    sys.exit(1)  # the warning is already on warning_stream
PY
	) || rc=$?
	if ((rc == 0)) && [ -z "$out" ]; then
		ktap_ok "$DOC is valid reStructuredText"
	else
		ktap_not_ok "$DOC does not parse cleanly (exit $rc)"
		diag_lines "$out"
	fi
}

stage "analyze: W=1 and sparse (C=2) on $DRIVER.c and ${DRIVER}_test.c, kernel-doc, $DOC"
ktap_begin 3
check_build
check_kernel_doc
check_doc
ktap_end

echo "analyze: $KTAP_PASSED passed, $KTAP_FAILED failed"
((KTAP_FAILED == 0))
