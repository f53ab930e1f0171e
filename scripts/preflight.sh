#!/usr/bin/env bash
# Before anything else in demo.sh and test.sh: root, room in the cache's
# filesystem, and the package archive when something must come from it.
# Each failure is one line saying what is wrong; nothing is changed.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/preflight.sh

What demo.sh and test.sh check before anything else: root, room in the
filesystem of the cache (8 GiB with an empty cache, 2 GiB warm), and,
when a package is missing or the guest's root file system is not made
yet, that the package archive answers (apt-get update). Each failure is
one line saying what is wrong. Takes no arguments.

Environment: POWERCLAMP_CACHE.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# Measured: a full run from an empty cache leaves about 3.5 GiB there (the
# tree 1.5, the kernel builds 0.4 each, the rootfs, its staging copy and
# the two images 0.8, ccache); the need below leaves room for ccache to
# grow towards its 5 GiB cap. A warm run rewrites only images and logs.
NEED_COLD_GIB=8
NEED_WARM_GIB=2

[ "$(id -u)" = 0 ] || die "preflight: run as root (apt-get, debootstrap and the cache in /var/tmp need it)"

dir=$CACHE_DIR
while [ ! -d "$dir" ]; do dir=$(dirname "$dir"); done
if [ -d "$OBJ_DIR" ]; then need=$NEED_WARM_GIB; else need=$NEED_COLD_GIB; fi
avail=$(($(df -Pk "$dir" | awk 'NR == 2 { print $4 }') / 1024 / 1024))
((avail >= need)) ||
	die "preflight: $avail GiB free in the filesystem of $CACHE_DIR, $need GiB needed (set POWERCLAMP_CACHE elsewhere)"

# The archive is needed only when a package is missing or the guest's root
# file system has not been made yet.
mapfile -t missing < <(missing_packages)
if ((${#missing[@]})) || [ ! -d "$ROOTFS_BASE" ]; then
	timeout 180 apt-get update -qq >/dev/null 2>&1 ||
		die "preflight: the package archive cannot be reached (apt-get update failed), and ${missing[*]:-the guest root file system} must come from it"
fi
info "preflight: root, $avail GiB free (need $need), archive $( ((${#missing[@]})) || [ ! -d "$ROOTFS_BASE" ] && echo reachable || echo 'not needed')"
