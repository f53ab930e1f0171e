#!/usr/bin/env bash
# Install the host packages the pipeline needs, only when one is missing.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

PACKAGES=(
	linux-source-6.1 quilt ccache make gcc bc bison flex libelf-dev
	libssl-dev xz-utils cpio kmod perl python3 python3-docutils sparse
	qemu-system-x86 debootstrap e2fsprogs shellcheck
)

stage "deps: checking ${#PACKAGES[@]} host packages"
missing=()
for pkg in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$pkg")
	fi
done

if ((${#missing[@]} == 0)); then
	info "all present"
	exit 0
fi

info "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
