#!/usr/bin/env bash
# Build and boot the patched kernel, then show the driver at work: a busy
# guest clamped at 25 %, with the idle /proc/stat shows, the work the loads
# lost and what the driver measured.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

"$REPO_DIR/scripts/install-deps.sh"
"$REPO_DIR/scripts/prepare-tree.sh"
"$REPO_DIR/scripts/build-kernel.sh"
"$REPO_DIR/scripts/build-rootfs.sh"
"$REPO_DIR/run-qemu.sh" --mode demo --log "$LOG_DIR/console-demo.log"
