#!/usr/bin/env bash
# Extract the distro kernel source once, then (re)apply the quilt series from
# the repository. Any fuzz, offset or failed hunk stops the run.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: scripts/prepare-tree.sh

Extracts /usr/src/linux-source-6.1.tar.xz into the cache once (again when
the installed package is another version) and applies the repository's
quilt series with quilt push -a; any fuzz, offset or failed hunk stops
it. When the series changed since the last push, the previous one is
popped first, and the files that hold what they held before get their
times back, so that make rebuilds only what changed. Takes no arguments.

Environment: POWERCLAMP_CACHE, PC_UNPATCHED=1 (a tree of its own,
without the accounting patches).
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

APPLIED=$TREE_DIR/.applied   # copy of the series as it was last pushed
EXTRACTED=$TREE_DIR/.source-version  # the package version the tree came from
PATCHED_BEFORE=$TREE_DIR.patched-before  # note_patched_files' record

series_changed() {
	! diff -rq "$APPLIED/patches" "$PATCHES_DIR" >/dev/null 2>&1 ||
		! cmp -s "$APPLIED/series" "$SERIES_FILE"
}

extract_tree() {
	stage "tree: extracting $SRC_TARBALL"
	[ -f "$SRC_TARBALL" ] || die "$SRC_TARBALL missing (run scripts/install-deps.sh)"
	rm -rf "$TREE_DIR.tmp"
	mkdir -p "$TREE_DIR.tmp"
	tar -xJf "$SRC_TARBALL" -C "$TREE_DIR.tmp" --strip-components=1
	installed_version "$SRC_PACKAGE" >"$TREE_DIR.tmp/.source-version"
	mv "$TREE_DIR.tmp" "$TREE_DIR"
}

# Undo the previous series from quilt's own backups and touch what it
# restored, so that make rebuilds files whose patch was dropped.
# pop_all PATCHES SERIES: take every applied patch of that series off, and
# touch the files they changed, whose restored copies would otherwise be
# older than the objects built from the patched ones
pop_all() {
	local files
	files=$(quilt_with "$1" "$2" files -a 2>/dev/null | sort -u) || true
	quilt_with "$1" "$2" pop -a -f -q >/dev/null || true
	(cd "$TREE_DIR" && for f in $files; do [ -e "$f" ] && touch "$f"; done) || true
}

pop_old_series() {
	stage "tree: series changed, popping the previous one"
	note_patched_files "$APPLIED/patches" "$APPLIED/series" "$PATCHED_BEFORE"
	pop_all "$APPLIED/patches" "$APPLIED/series"
	# the tree is pristine now: a failed push must not find the old record
	rm -rf "$APPLIED"
}

# back_to_pristine: after a push that stopped part-way, the patches it
# applied come off again, so that the next run starts from the pristine
# tree rather than building a partial series
back_to_pristine() {
	pop_all "$PATCHES_DIR" "$SERIES_FILE"
	rm -rf "$TREE_DIR/.pc" "$APPLIED" "$PATCHED_BEFORE"
}

push_series() {
	if ! grep -qv '^\s*\(#\|$\)' "$SERIES_FILE"; then
		stage "tree: no patch to apply (the tree as Debian ships it)"
		rm -rf "$APPLIED"
		mkdir -p "$APPLIED"
		cp -r "$PATCHES_DIR" "$APPLIED/"
		cp "$SERIES_FILE" "$APPLIED/series"
		return
	fi
	stage "tree: quilt push -a ($(grep -cv '^\s*\(#\|$\)' "$SERIES_FILE") patches)"
	local log=$CACHE_DIR/quilt-push.log
	if ! quilt_with "$PATCHES_DIR" "$SERIES_FILE" push -a --fuzz=0 \
		>"$log" 2>&1; then
		cat "$log"
		back_to_pristine
		die "quilt push failed: a patch does not apply to the pristine tree"
	fi
	if grep -E 'offset|fuzz' "$log"; then
		back_to_pristine
		die "a patch applied only with an offset or fuzz: refresh it"
	fi
	grep '^Applying patch' "$log" | sed 's/^/    /'
	rm -rf "$APPLIED"
	mkdir -p "$APPLIED"
	cp -r "$PATCHES_DIR" "$APPLIED/"
	cp "$SERIES_FILE" "$APPLIED/series"
	keep_unchanged_times "$PATCHED_BEFORE"
}

# write_unpatched_series: the series without the patches that change
# kernel/ (the accounting fixes), for PC_UNPATCHED=1's tree; rewritten only
# when it changes, so that an unchanged series is not pushed again. The
# RT budget's getter (kernel/sched/rt.c alone) is not accounting, and the
# driver needs it: it stays.
write_unpatched_series() {
	local patch
	mkdir -p "$UNPATCHED_DIR"
	{ grep -v '^\s*\(#\|$\)' "$TREE_CONF/series" || true; } | while read -r patch; do
		[ "$PC_UNPATCHED" = all ] && continue
		grep '^+++ b/kernel/' "$PATCHES_DIR/$patch" |
			grep -qvx '+++ b/kernel/sched/rt.c' || echo "$patch"
	done >"$SERIES_FILE.new"
	if cmp -s "$SERIES_FILE.new" "$SERIES_FILE"; then
		rm "$SERIES_FILE.new"
	else
		mv "$SERIES_FILE.new" "$SERIES_FILE"
	fi
	info "unpatched tree: the series without $(grep -v '^\s*\(#\|$\)' "$TREE_CONF/series" |
		grep -cvxFf "$SERIES_FILE") patches that change kernel/"
}

mkdir -p "$CACHE_DIR" "$TREE_CACHE"
[ "${PC_UNPATCHED:-0}" != 0 ] && write_unpatched_series
if [ -d "$TREE_DIR" ] && [ -d "$TREE_DIR/.pc" ] && [ ! -d "$APPLIED" ]; then
	info "tree holds patches of unknown origin: starting afresh"
	rm -rf "$TREE_DIR"
fi
# A tree extracted from another version of the package than the one
# installed now is extracted again, so that the tree built is the tree the
# mails are exported from.
installed=$(installed_version "$SRC_PACKAGE")
[ "$installed" = "$SRC_VERSION" ] ||
	die "$SRC_PACKAGE ${installed:-not installed}, the series wants $SRC_VERSION (run scripts/install-deps.sh)"
if [ -f "$TREE_DIR/Makefile" ] && [ "$(cat "$EXTRACTED" 2>/dev/null)" != "$installed" ]; then
	info "tree extracted from $SRC_PACKAGE $(cat "$EXTRACTED" 2>/dev/null || echo '(unknown)'), installed is $installed: extracting again"
	rm -rf "$TREE_DIR"
fi
[ -f "$TREE_DIR/Makefile" ] || extract_tree

if [ -d "$APPLIED" ] && ! series_changed; then
	stage "tree: series unchanged, already applied"
	exit 0
fi
[ -d "$TREE_DIR/.pc" ] && [ -d "$APPLIED" ] && pop_old_series
push_series
