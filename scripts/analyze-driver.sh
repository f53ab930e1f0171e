#!/usr/bin/env bash
# Static checks of the driver in the patched tree: W=1 and sparse (C=2)
# with no warning, kernel-doc with nothing to report, and documentation that
# docutils parses without a warning. Needs a configured build (build-kernel).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

DRIVER=drivers/thermal/intel/intel_powerclamp
DOC=Documentation/driver-api/thermal/intel_powerclamp.rst
failed=0

stage "analyze: W=1 and sparse (C=2) on $DRIVER.c"
touch "$TREE_DIR/$DRIVER.c"   # so that W=1 recompiles it; C=2 always runs sparse
out=$(make -s -C "$TREE_DIR" O="$OBJ_DIR" CC="ccache gcc" W=1 C=2 \
	"$DRIVER.o" 2>&1) || { echo "$out"; die "the driver does not build"; }
if [ -n "$out" ]; then
	printf '    %s\n' "$out"
	echo "not ok - W=1/sparse report on the driver"
	failed=1
else
	echo "ok - W=1 and sparse: no warnings"
fi

out=$("$TREE_DIR/scripts/kernel-doc" -none "$TREE_DIR/$DRIVER.c" \
	"$TREE_DIR/${DRIVER}_test.c" 2>&1)
if [ -n "$out" ]; then
	printf '    %s\n' "$out"
	echo "not ok - kernel-doc reports on the driver"
	failed=1
else
	echo "ok - kernel-doc: nothing to report"
fi

if python3 - "$TREE_DIR/$DOC" <<'PY'
import sys
import docutils.core
source = open(sys.argv[1], encoding="utf-8").read()
docutils.core.publish_doctree(source, settings_overrides={
    "report_level": 2, "halt_level": 2, "warning_stream": sys.stdout})
PY
then
	echo "ok - $DOC is valid reStructuredText"
else
	echo "not ok - $DOC does not parse cleanly"
	failed=1
fi
exit "$failed"
