#!/usr/bin/env bash
# Build the emulated-package QEMU: Debian 12's qemu source at the version in
# emulator/source-version, with emulator/series applied, configured for the
# x86_64-softmmu target and the few devices run-qemu.sh uses, with ccache.
# The source is extracted afresh whenever the version or the series changes
# (4 s; ccache keeps the rebuild short), and the binary is left at
# $EMULATOR_BIN. Debian's stock qemu-system-x86 stays the emulator of the
# boots that prove the fallback path.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/build-emulator.sh

Builds the emulated-package QEMU: Debian 12's qemu source at the version in
emulator/source-version (apt-get source, into the cache) with
emulator/series applied, configured for the x86_64-softmmu target and the
few devices run-qemu.sh uses, with ccache. The source is extracted again
whenever the version or the series changes. The binary is left at
emulator/bin/qemu-system-x86_64 in the cache. Takes no arguments.

Environment: POWERCLAMP_CACHE. See docs/emulator.md.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

DL_DIR=$EMULATOR_DIR/dl
SRC_DIR=$EMULATOR_DIR/src
BUILD_DIR=$EMULATOR_DIR/build
STAMP=$SRC_DIR/.powerclamp-series     # version + series + patches applied

# Everything off but TCG and libfdt; the firmware comes from Debian's
# seabios and qemu-system-data packages, as the stock binary's does.
CONFIGURE_OPTS=(
	--target-list=x86_64-softmmu --without-default-features
	--without-default-devices --with-devices-x86_64=powerclamp
	--enable-tcg --enable-fdt=system --disable-docs --disable-werror
	--disable-debug-info
	--disable-install-blobs --with-git-submodules=ignore --audio-drv-list=
	--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
	"--cc=ccache gcc"
)

wanted_stamp() {
	echo "$EMULATOR_VERSION"
	printf '%s\n' "${CONFIGURE_OPTS[@]}"
	cat "$REPO_DIR/emulator/series" "$REPO_DIR/emulator/devices.mak"
	cat "$REPO_DIR"/emulator/patches/*.patch
}

fetch_source() {
	local dsc
	dsc=$DL_DIR/qemu_${EMULATOR_VERSION#*:}.dsc
	if [ ! -f "$dsc" ]; then
		stage "emulator: apt-get source qemu=$EMULATOR_VERSION" >&2
		mkdir -p "$DL_DIR"
		(cd "$DL_DIR" && apt-get source -qq --download-only "qemu=$EMULATOR_VERSION") >&2 ||
			die "could not download the qemu source (scripts/install-deps.sh adds the deb-src entry)"
	fi
	echo "$dsc"
}

# Extract with Debian's own patches (dpkg-source applies them), then ours
# on top with quilt, in a .pc of its own; any fuzz or offset stops the run.
extract_and_patch() {
	local dsc=$1 log=$EMULATOR_DIR/quilt-push.log
	stage "emulator: extracting $(basename "$dsc") and applying emulator/series"
	rm -rf "$SRC_DIR" "$BUILD_DIR"
	# apt-get source checked the files against the signed archive index
	dpkg-source --no-check -x "$dsc" "$SRC_DIR" >/dev/null
	cp "$REPO_DIR/emulator/devices.mak" \
		"$SRC_DIR/configs/devices/x86_64-softmmu/powerclamp.mak"
	if ! (cd "$SRC_DIR" && QUILT_PC=.pc-powerclamp \
		QUILT_PATCHES="$REPO_DIR/emulator/patches" \
		QUILT_SERIES="$REPO_DIR/emulator/series" \
		quilt push -a --fuzz=0) >"$log" 2>&1; then
		cat "$log"
		die "quilt push failed: an emulator patch does not apply"
	fi
	if grep -E 'offset|fuzz' "$log"; then
		die "an emulator patch applied only with an offset or fuzz: refresh it"
	fi
	grep '^Applying patch' "$log" | sed 's/^/    /'
}

configure_build() {
	stage "emulator: configure (x86_64-softmmu, TCG only)"
	mkdir -p "$BUILD_DIR"
	(cd "$BUILD_DIR" && "$SRC_DIR/configure" "${CONFIGURE_OPTS[@]}") \
		>"$EMULATOR_DIR/configure.log" 2>&1 ||
		{ tail -20 "$EMULATOR_DIR/configure.log"; die "qemu configure failed"; }
}

mkdir -p "$EMULATOR_DIR"
dsc=$(fetch_source)
if ! wanted_stamp | cmp -s - "$STAMP"; then
	extract_and_patch "$dsc"
	configure_build
	wanted_stamp >"$STAMP"
fi
stage "emulator: ninja qemu-system-x86_64 ($(nproc) jobs)"
ninja -C "$BUILD_DIR" -j"$(nproc)" qemu-system-x86_64 >"$EMULATOR_DIR/build.log" 2>&1 ||
	{ grep -B2 -A10 'error' "$EMULATOR_DIR/build.log" | head -60; die "qemu build failed"; }
tail -n 1 "$EMULATOR_DIR/build.log" | sed 's/^/    /'
# Run from outside the build folder: next to its qemu-bundle the binary
# would look for the firmware inside the bundle, which has none.
mkdir -p "$(dirname "$EMULATOR_BIN")"
cp "$BUILD_DIR/qemu-system-x86_64" "$EMULATOR_BIN.tmp"
mv "$EMULATOR_BIN.tmp" "$EMULATOR_BIN"
"$EMULATOR_BIN" -cpu help | grep -q Skylake-Client || die "$EMULATOR_BIN does not run"
info "$("$EMULATOR_BIN" --version | head -n 1), at $EMULATOR_BIN"
