#!/usr/bin/env bash
# Shared settings and helpers for the pipeline scripts. Sourced, never run.
# shellcheck disable=SC2034  # the variables are used by the scripts that source this

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything that is big or slow to make lives outside git's view, in a cache
# that survives fresh clones (CI clones anew each run).
CACHE_DIR=${POWERCLAMP_CACHE:-/var/tmp/powerclamp-cache}
# PC_TREE names the kernel tree by its Debian source package: 6.1 (the
# default: Debian 12's linux-source-6.1, the series in patches/ and series),
# or 6.12 and 7.3 (Debian 13's linux-source-6.12 and trixie-backports'
# linux-source-7.3), whose series, pinned version and config fragment live
# in trees/<tree>/ and whose tree and builds live in the cache's
# tree-<tree>/. The mainline trees carry incremental patches to the
# in-tree driver and the accounting fix, not this project's 6.1 driver.
PC_TREE=${PC_TREE:-6.1}
case "$PC_TREE" in
6.1)
	TREE_CONF=$REPO_DIR
	PATCHES_DIR=$REPO_DIR/patches
	TREE_CACHE=$CACHE_DIR
	;;
6.12 | 7.3)
	TREE_CONF=$REPO_DIR/trees/$PC_TREE
	PATCHES_DIR=$TREE_CONF/patches
	TREE_CACHE=$CACHE_DIR/tree-$PC_TREE
	;;
*) echo "PC_TREE must be 6.1, 6.12 or 7.3, not '$PC_TREE'" >&2; exit 1 ;;
esac
SRC_PACKAGE=linux-source-$PC_TREE
SRC_TARBALL=/usr/src/$SRC_PACKAGE.tar.xz
# The Debian version of the source package the tree's series was last
# refreshed against: install-deps.sh installs exactly it, prepare-tree.sh
# extracts the tree again when the installed one differs, and the build and
# the exported mails record it. scripts/try-sources.sh tries the others.
SRC_VERSION=$(cat "$TREE_CONF/source-version")
TREE_DIR=$TREE_CACHE/linux           # pristine distro source + the quilt series
ROOTFS_BASE=$CACHE_DIR/rootfs-base   # debootstrap result, made once
# Two kernels from the one series: "test" with config-fragments/debug.config
# (lockdep, KASAN, kmemleak...) for the test suite, "bench" without it for
# the benchmark's figures. Each has its own build output and image. A third,
# "kcsan", has config-fragments/variants/kcsan.config instead of debug.config
# and serves scripts/kcsan.sh only; a fourth, "debian", adds
# config-fragments/variants/debian.config (Debian's timekeeping, accounting,
# preemption and RCU options) to bench's and serves scripts/debian-variant.sh;
# "debian-debug" adds config-fragments/variants/debian-debug.config to it
# (IRQ time accounting, lockdep); "deb" adds
# config-fragments/variants/deb.config to bench's (what a Debian system
# booted from the kernel's own .deb packages needs: an initramfs, systemd)
# and serves scripts/deb-build.sh and scripts/deb-guest.sh.
PC_KERNEL=${PC_KERNEL:-test}
case "$PC_KERNEL" in
test) OBJ_DIR=$TREE_CACHE/obj ;;      # kernel build output (make O=)
bench) OBJ_DIR=$TREE_CACHE/obj-bench ;;
kcsan) OBJ_DIR=$TREE_CACHE/obj-kcsan ;;
debian) OBJ_DIR=$TREE_CACHE/obj-debian ;;
debian-debug) OBJ_DIR=$TREE_CACHE/obj-debian-debug ;;
rt) OBJ_DIR=$TREE_CACHE/obj-rt ;;
deb) OBJ_DIR=$TREE_CACHE/obj-deb ;;
*) echo "PC_KERNEL must be test, bench, kcsan, debian, debian-debug, rt or deb, not '$PC_KERNEL'" >&2; exit 1 ;;
esac
# PC_UNPATCHED=1: the same kernel from a tree of its own that carries the
# series without its accounting patches (those that change kernel/), so
# that scripts/debian-variant.sh --unpatched can print the figures from
# before them beside the figures with them.
# PC_UNPATCHED=all: the tree with no patch at all (the in-tree driver as
# Debian ships it).
SERIES_FILE=$TREE_CONF/series
if [ "${PC_UNPATCHED:-0}" != 0 ]; then
	UNPATCHED_DIR=$TREE_CACHE/unpatched
	[ "$PC_UNPATCHED" = all ] && UNPATCHED_DIR=$TREE_CACHE/pristine
	TREE_DIR=$UNPATCHED_DIR/linux
	OBJ_DIR=$UNPATCHED_DIR/${OBJ_DIR##*/}
	SERIES_FILE=$UNPATCHED_DIR/series
fi
IMAGE=$OBJ_DIR.ext4                  # rootfs + modules + guest scripts
LOG_DIR=${POWERCLAMP_LOGS:-$REPO_DIR/out}
# The emulated-package QEMU (emulator/, scripts/build-emulator.sh): Debian's
# qemu source at this version with our series, built beside the kernels.
EMULATOR_VERSION=$(cat "$REPO_DIR/emulator/source-version")
EMULATOR_DIR=$CACHE_DIR/emulator
EMULATOR_BIN=$EMULATOR_DIR/bin/qemu-system-x86_64
export CCACHE_DIR=${CCACHE_DIR:-$CACHE_DIR/ccache}
# Paths under the cache are hashed relative to the build folder, so that the
# variants of a tree (patched, unpatched, pristine, the bisect tree), each
# at ../linux from its build, share their compilations.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$CACHE_DIR}

# Wall-clock start of the whole command, shared with the scripts it runs.
export PC_START_EPOCH=${PC_START_EPOCH:-$(date +%s)}

stage() {
	printf '\n==> [%4ss] %s\n' "$(($(date +%s) - PC_START_EPOCH))" "$*"
}

info() {
	printf '    %s\n' "$*"
}

# quilt_with PATCHES_DIR SERIES_FILE ARGS...: run quilt in the tree on the
# given series. quilt records the patches folder and series file of its
# first push in .pc/ and prefers them to the environment, so they are
# rewritten here: the repository is cloned to a new folder for every CI run.
quilt_with() {
	local patches=$1 series=$2
	shift 2
	if [ -d "$TREE_DIR/.pc" ]; then
		echo "$patches" >"$TREE_DIR/.pc/.quilt_patches"
		echo "$series" >"$TREE_DIR/.pc/.quilt_series"
	fi
	(cd "$TREE_DIR" && QUILT_PATCHES=$patches QUILT_SERIES=$series quilt "$@")
}

# note_patched_files PATCHES SERIES RECORD: the checksum and modification
# time of each file that series changes, into RECORD, before the series
# comes off the tree
note_patched_files() {
	local f
	quilt_with "$1" "$2" files -a 2>/dev/null | sort -u |
		while read -r f; do
			[ -f "$TREE_DIR/$f" ] || continue
			printf '%s %s %s\n' "$(sha256sum <"$TREE_DIR/$f" | cut -d' ' -f1)" \
				"$(stat -c %Y "$TREE_DIR/$f")" "$f"
		done >"$3" || true
}

# keep_unchanged_times RECORD: each file of RECORD that the tree holds as
# it was gets its old time back, so that make rebuilds what a patch
# changed and not everything that includes a file the series touches
# (quilt's pop and push give every file they restore a new time)
keep_unchanged_times() {
	local sum mtime f kept=0 total=0
	[ -f "$1" ] || return 0
	while read -r sum mtime f; do
		total=$((total + 1))
		[ -f "$TREE_DIR/$f" ] || continue
		[ "$(sha256sum <"$TREE_DIR/$f" | cut -d' ' -f1)" = "$sum" ] || continue
		touch -d "@$mtime" "$TREE_DIR/$f"
		kept=$((kept + 1))
	done <"$1"
	rm -f "$1"
	info "$kept of the $total files the series changed are as they were: times kept"
}

# installed_version PACKAGE: its installed Debian version, or nothing
installed_version() {
	{ dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || true; } |
		awk '$1 == "install" && $3 == "installed" { print $4 }'
}

# The host packages the pipeline needs (install-deps.sh installs them).
HOST_PACKAGES=(
	quilt ccache make gcc bc bison flex libelf-dev
	libssl-dev xz-utils cpio kmod perl python3 python3-docutils sparse
	qemu-system-x86 debootstrap e2fsprogs shellcheck util-linux
	dpkg-dev ninja-build meson pkg-config libglib2.0-dev libpixman-1-dev
	libfdt-dev zlib1g-dev git-email libmailtools-perl
)
# What make bindeb-pkg (scripts/deb-build.sh, which sets PC_KERNEL=deb)
# checks for besides those above: its Build-Depends and
# dpkg-buildpackage's own needs. Only that route installs them.
[ "$PC_KERNEL" != deb ] || HOST_PACKAGES+=(rsync fakeroot build-essential)

# Debian's kernel configurations, of the same version as the source
# (scripts/w1-debian.sh compiles the 6.1 series under config.amd64_none_amd64)
CONFIG_PACKAGE=
[ "$PC_TREE" = 6.1 ] && CONFIG_PACKAGE=linux-config-6.1

# missing_packages: what apt-get must install, one per line; the kernel
# source and configurations as PACKAGE=VERSION when another version (or
# none) is installed
missing_packages() {
	local pkg
	for pkg in "${HOST_PACKAGES[@]}"; do
		[ -n "$(installed_version "$pkg")" ] || echo "$pkg"
	done
	for pkg in "$SRC_PACKAGE" ${CONFIG_PACKAGE:+"$CONFIG_PACKAGE"}; do
		[ "$(installed_version "$pkg")" = "$SRC_VERSION" ] ||
			echo "$pkg=$SRC_VERSION"
	done
}

# take_lock: hold the cache for this run, or fail at once if another run
# holds it (two runs would apply, build and boot in the same tree)
take_lock() {
	# a script the holder runs (test.sh runs w1-debian.sh) shares its lock
	[ "${PC_LOCK_HOLDER:-}" = "$PPID" ] && return
	mkdir -p "$CACHE_DIR"
	exec 9>>"$CACHE_DIR/.lock"
	if ! flock -n 9; then
		die "another run holds $CACHE_DIR (PID $(cat "$CACHE_DIR/.lock.pid" 2>/dev/null || echo unknown)): wait for it, or set POWERCLAMP_CACHE"
	fi
	echo "$$" >"$CACHE_DIR/.lock.pid"
	export PC_LOCK_HOLDER=$$
}

# set_up_kernel: everything from a bare machine to a bootable kernel and
# image of $PC_KERNEL (preflight, lock, host packages, tree, build, rootfs),
# as the demo and scripts/kcsan.sh need it; the suite times these stages
# one by one instead.
set_up_kernel() {
	"$REPO_DIR/scripts/preflight.sh"
	take_lock
	"$REPO_DIR/scripts/install-deps.sh"
	"$REPO_DIR/scripts/prepare-tree.sh"
	"$REPO_DIR/scripts/build-kernel.sh"
	"$REPO_DIR/scripts/build-rootfs.sh"
}

die() {
	printf 'ERROR: %s\n' "$*" >&2
	exit 1
}

# Run a long command, printing a heartbeat line every 30 s so that CI logs
# show progress instead of minutes of silence. Output goes to $1.
with_heartbeat() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	local pid=$! start=$SECONDS next=$((SECONDS + 30))
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if ((SECONDS >= next)); then
			info "... $((SECONDS - start))s: $(tail -n 1 "$log" | cut -c1-100)"
			next=$((SECONDS + 30))
		fi
	done
	wait "$pid"
}

# The kernel as Debian packages (scripts/deb-build.sh): the .deb files of
# the "deb" kernel, which scripts/deb-guest.sh installs in its guest
DEB_DIR=$TREE_CACHE/debs

# Debian's stock kernel, for the benchmark's comparison (fetch-stock-kernel.sh)
STOCK_DIR=$CACHE_DIR/stock
STOCK_KERNEL=$STOCK_DIR/vmlinuz
STOCK_INITRD=$STOCK_DIR/initrd.gz

# The registry of guest boots (guest/boots).
BOOTS=${PC_BOOTS:-$REPO_DIR/guest/boots}

# boot_names: the boots, in order
boot_names() { awk '$1 == "boot" { print $2 }' "$BOOTS"; }

# boot_field BOOT KEY: a setting of BOOT's "boot" line (kernel, smp, cpu,
# timeout); a key given more than once (append=) gives its values joined by
# spaces
boot_field() {
	awk -v b="$1" -v k="$2" '$1 == "boot" && $2 == b {
		for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) {
			printf "%s%s", sep, substr($i, length(k) + 2)
			sep = " "
		}
		if (sep != "") print ""
	}' "$BOOTS"
}

# boot_checks BOOT: BOOT's checks, comma-separated, in order
boot_checks() {
	awk -v b="$1" '$1 == "boot" { on = ($2 == b); next }
		$1 == "floor" { on = 0; next }
		/^[ \t]*(#|$)/ { next }
		on { for (i = 1; i <= NF; i++) { printf "%s%s", sep, $i; sep = "," } }
		END { print "" }' "$BOOTS"
}

# plan_problem: what is wrong with the registry ($BOOTS) as the suite's
# plan, in one line, and status 1; nothing and status 0 when it is right.
# Without this, a registry that is missing, empty or lost a boot or a
# check boots less and can still come out green. Right: it exists,
# declares at least one boot, every boot names at least one check, every
# other line belongs to a boot, and it has one line "floor boots=N
# checks=N" with at least as many boots and checks (counted once per boot
# that runs them) as that says, so that deleting a boot or a check fails
# until the floor is lowered with it, on purpose.
plan_problem() {
	if [ ! -f "$BOOTS" ] || [ ! -r "$BOOTS" ]; then
		echo "no registry of boots at $BOOTS"
		return 1
	fi
	awk -v reg="$BOOTS" '
		function bad(why) { print reg ": " why; err = 1; exit 1 }
		/^[ \t]*(#|$)/ { next }
		$1 == "floor" {
			if (floors++) bad("line " NR ": a second floor line")
			for (i = 2; i <= NF; i++) {
				split($i, kv, "=")
				if (kv[1] !~ /^(boots|checks)$/ || kv[2] !~ /^[0-9]+$/)
					bad("line " NR ": the floor wants boots=N checks=N, not \047" $i "\047")
				floor[kv[1]] = kv[2]
			}
			boot = ""
			next
		}
		$1 == "boot" {
			if (NF < 2) bad("line " NR ": a boot without a name")
			if ($2 in n) bad("boot " $2 " declared twice")
			boot = $2
			n[boot] = 0
			order[++boots] = boot
			next
		}
		boot == "" { bad("line " NR ": \047" $1 "\047 belongs to no boot") }
		{ n[boot] += NF; checks += NF }
		END {
			if (err) exit 1
			if (!boots) bad("declares no boot")
			for (i = 1; i <= boots; i++)
				if (!n[order[i]]) bad("boot " order[i] " names no check")
			if (!("boots" in floor) || !("checks" in floor))
				bad("no floor line giving boots=N and checks=N")
			if (boots < floor["boots"] + 0)
				bad(boots " boots, below the floor of " floor["boots"])
			if (checks < floor["checks"] + 0)
				bad(checks " checks, below the floor of " floor["checks"])
		}' "$BOOTS"
}

# known_stall CONSOLE: print the name of the scripts/known-stalls signature
# CONSOLE matches, or fail
known_stall() {
	local name regex
	while IFS=$'\t' read -r name regex; do
		[[ -z $name || $name == \#* ]] && continue
		if grep -qE -- "$regex" "$1" 2>/dev/null; then
			echo "$name"
			return 0
		fi
	done <"$REPO_DIR/scripts/known-stalls"
	return 1
}

# mail_header_problem PATCH_FILE: what git am would not accept in the mail
# header (From, Date, Subject, a first Signed-off-by matching the author),
# printed as one line; nothing when it is right. git mailinfo is what
# git am uses to split a mail into author, subject and message.
mail_header_problem() {
	local file=$1 info author sob
	[ -r "$file" ] || { echo "no such patch: $file"; return; }
	info=$(git mailinfo /dev/null /dev/null <"$file" 2>&1) || true
	author=$(sed -n 's/^Author: //p' <<<"$info")
	sob=$(sed -n 's/^Signed-off-by: \(.*\) <.*/\1/p' "$file" | head -n 1) || true
	if ! grep -q '^Subject: .\+' <<<"$info" || ! grep -q '^Date: ' <<<"$info" ||
		[ -z "$author" ] || [ "$author" != "$sob" ]; then
		echo "author='$author' sign-off='$sob', subject and date present: $(grep -c '^\(Subject: .\+\|Date: \)' <<<"$info")/2"
	fi
}
