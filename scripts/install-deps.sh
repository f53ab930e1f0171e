#!/usr/bin/env bash
# Install the host packages the pipeline needs, only when one is missing,
# and the kernel source of PC_TREE (linux-source-6.1 by default) at exactly
# the version its source-version pins. Add the deb-src entry that
# `apt-get source qemu` (scripts/build-emulator.sh) needs, once; for the
# Debian 13 trees, the trixie and trixie-backports suites in a sources file
# of their own, pinned at priority 100 so that nothing installed on this
# Debian 12 host moves to them (only what is asked for by version comes
# from them).
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

TRIXIE_LIST=/etc/apt/sources.list.d/powerclamp-trixie.sources
TRIXIE_PIN=/etc/apt/preferences.d/powerclamp-trixie.pref
if [ "$PC_TREE" != 6.1 ] && [ ! -f "$TRIXIE_LIST" ]; then
	stage "deps: adding Debian 13's trixie and trixie-backports ($TRIXIE_LIST), pinned at 100"
	cat >"$TRIXIE_PIN" <<'PIN'
Package: *
Pin: release n=trixie
Pin-Priority: 100

Package: *
Pin: release n=trixie-backports
Pin-Priority: 100
PIN
	cat >"$TRIXIE_LIST" <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-backports
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
