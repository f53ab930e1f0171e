#!/usr/bin/env bash
# Export the series as git format-patch mails with our cover letter, ready
# for git send-email, and prove that git am applies them to a pristine tree.
#
# usage: export-series.sh [OUTPUT_DIR]   (default: out/series)
# Only the files the series touches are taken from the distro tarball: git
# needs nothing else to apply or format the patches.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse ARGS -- "$@" <<'EOF'
usage: scripts/export-series.sh [OUTPUT_DIR]   (default: out/series)

Exports the series as git format-patch mails with the cover letter
(patches/0000-cover-letter.txt; shortlog and diffstat added by git), ready
for git send-email, into OUTPUT_DIR, which is replaced; then proves that
git am applies them to the pristine files of
/usr/src/linux-source-6.1.tar.xz and gives the quilt result. The git am
trees are left in export/ in the cache.
EOF
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

OUT=${1:-$LOG_DIR/series}
WORK=$CACHE_DIR/export
COVER=$REPO_DIR/patches/0000-cover-letter.txt
mapfile -t PATCHES < <(grep -v '^\s*\(#\|$\)' "$REPO_DIR/series" |
	sed "s|^|$REPO_DIR/patches/|")

# Files named in the patches' ---/+++ lines, as paths inside the tree.
touched_files() {
	sed -n 's@^\(---\|+++\) [ab]/\([^[:space:]]*\).*@\2@p' "${PATCHES[@]}" | sort -u
}

# A git repository holding the pristine version of every touched file.
pristine_repo() {
	local dir=$1 top
	rm -rf "$dir"
	mkdir -p "$dir"
	top=$(basename "$SRC_TARBALL" .tar.xz)   # linux-source-6.1
	mapfile -t files < <(touched_files)
	tar -xJf "$SRC_TARBALL" -C "$dir" --strip-components=1 \
		"${files[@]/#/$top/}" 2>/dev/null || true  # new files are absent
	git -C "$dir" init -q
	git -C "$dir" -c user.name=pristine -c user.email=pristine@localhost \
		add -A
	git -C "$dir" -c user.name=pristine -c user.email=pristine@localhost \
		commit -qm "linux-source-6.1 as shipped"
}

git_am() {
	git -C "$1" -c user.name=export -c user.email=export@localhost \
		am -q --keep-cr "${@:2}"
}

stage "export: git am the quilt patches onto the pristine files"
pristine_repo "$WORK/build"
git_am "$WORK/build" "${PATCHES[@]}"

stage "export: git format-patch with the cover letter into $OUT"
rm -rf "$OUT"
subject=$(sed -n 's/^Subject: \[PATCH 0\/[0-9]*\] //p' "$COVER")
author=$(sed -n 's/^From: //p' "$COVER")
email=${author##*<}
git -C "$WORK/build" -c user.name="${author% <*}" -c user.email="${email%>}" \
	format-patch -q --cover-letter --thread=shallow \
	-o "$OUT" "HEAD~${#PATCHES[@]}"
letter=$(ls "$OUT"/0000-*.patch)
# Our subject and text replace format-patch's placeholders; its shortlog and
# diffstat stay. The text ends with the source the series applies to.
body="$(sed '1,/^$/d' "$COVER")

base: Debian $SRC_PACKAGE $SRC_VERSION"
awk -v subject="$subject" -v body="$body" '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
	/\*\*\* BLURB HERE \*\*\*/ { print body; next }
	{ print }' "$letter" >"$letter.new"
mv "$letter.new" "$letter"
for f in "$OUT"/*; do info "${f##*/}"; done

stage "export: git am the exported mails onto a fresh pristine tree"
pristine_repo "$WORK/verify"
mails=()
for f in "$OUT"/[0-9][0-9][0-9][0-9]-*.patch; do
	[ "${f##*/}" = "$(basename "$letter")" ] || mails+=("$f")
done
git_am "$WORK/verify" "${mails[@]}"
if diff -r -q -x .git "$WORK/build" "$WORK/verify" >/dev/null; then
	info "the exported series applies with git am and gives the same tree"
else
	die "the exported series does not reproduce the quilt result"
fi
