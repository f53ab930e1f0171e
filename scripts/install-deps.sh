#!/usr/bin/env bash
# Install the host packages the pipeline needs, only when one is missing,
# and linux-source-6.1 at exactly the version in source-version.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

stage "deps: checking ${#HOST_PACKAGES[@]} host packages and $SRC_PACKAGE $SRC_VERSION"
mapfile -t missing < <(missing_packages)

if ((${#missing[@]} == 0)); then
	info "all present ($SRC_PACKAGE $SRC_VERSION)"
	exit 0
fi

info "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-cache madison "$SRC_PACKAGE" | awk '{ print $3 }' | grep -qxF "$SRC_VERSION"; then
	die "the archive no longer offers $SRC_PACKAGE $SRC_VERSION: run scripts/try-sources.sh and refresh the series"
fi
apt-get install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}" >/dev/null
