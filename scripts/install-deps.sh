#!/usr/bin/env bash
# Install the host packages the pipeline needs, only when one is missing,
# and linux-source-6.1 at exactly the version in source-version. Add the
# deb-src entry that `apt-get source qemu` (scripts/build-emulator.sh)
# needs, once.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/install-deps.sh

Installs the host packages the pipeline needs with apt-get, only when one
is missing, and linux-source-6.1 and linux-config-6.1 at exactly the
version in source-version (downgrading if need be). Adds the deb-src
entry that scripts/build-emulator.sh needs for the qemu source, once.
Needs root. Takes no arguments.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

SRC_LIST=/etc/apt/sources.list.d/powerclamp-src.sources
need_update=0
if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	stage "deps: adding the Debian deb-src entry ($SRC_LIST) for the qemu source"
	cat >"$SRC_LIST" <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
	need_update=1
fi

stage "deps: checking ${#HOST_PACKAGES[@]} host packages and $SRC_PACKAGE $SRC_VERSION"
mapfile -t missing < <(missing_packages)

if ((${#missing[@]} == 0)); then
	info "all present ($SRC_PACKAGE $SRC_VERSION)"
	((need_update == 0)) || apt-get update -qq
	exit 0
fi

info "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-cache madison "$SRC_PACKAGE" | awk '{ print $3 }' | grep -qxF "$SRC_VERSION"; then
	die "the archive no longer offers $SRC_PACKAGE $SRC_VERSION: run scripts/try-sources.sh and refresh the series"
fi
apt-get install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}" >/dev/null
