#!/usr/bin/env bash
# The edit-and-check loop from the top of the repository: scripts/check.sh
# with the same arguments (./check.sh --help).
set -euo pipefail
exec "$(dirname "$0")/scripts/check.sh" "$@"
