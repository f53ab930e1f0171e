#!/usr/bin/env bash
# Export a tree's series as git format-patch mails with its cover letter,
# ready for git send-email, and prove that git am applies them to a
# pristine tree.
#
# usage: export-series.sh [--tree TREE] [OUTPUT_DIR]
# Only the files the series touches are taken from the distro tarball: git
# needs nothing else to apply or format the patches. For a mainline tree
# (6.12, 7.3) the mails are the sender's (git config user.name and
# user.email), addressed with the tree's own get_maintainer.pl, and checked
# with its checkpatch.pl and git send-email --dry-run.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse --tree= ARGS -- "$@" <<'EOF'
usage: scripts/export-series.sh [--tree TREE] [OUTPUT_DIR]

Exports the series of TREE (6.1, the default, or the mainline trees 6.12
and 7.3; PC_TREE in the environment is the same) as git format-patch
mails with its cover letter (patches/0000-cover-letter.txt, or
trees/TREE/patches/0000-cover-letter.txt; shortlog and diffstat added by
git), ready for git send-email, into OUTPUT_DIR, which is replaced
(default: out/series for 6.1, out/series-TREE for the others). Then
proves that git am applies them to the pristine files of
/usr/src/linux-source-TREE.tar.xz and gives the quilt result. The git am
trees are left in export/ in the cache (tree-TREE/export/ for a
mainline tree).

For 6.1 the mails carry the identity of the patches and the cover letter.
For a mainline tree they are the sender's: the first From: and the
Signed-off-by: of the patches' own author become git config user.name
and user.email, and the export refuses (exit 1, nothing written) when
either is unset or the address is a placeholder (example.com,
example.org, example.net, *.example, *.invalid, *.test, *.localhost,
localhost). Each mail gets To: (maintainers and reviewers; the lists
when it has none) and Cc: (mailing lists) from the tree's
scripts/get_maintainer.pl --no-git --no-git-fallback --no-rolestats, the
cover letter the union of them, and the cover letter ends with the base
(the tree Makefile's version and the Debian package). Needs the patched
tree (scripts/prepare-tree.sh with PC_TREE=TREE). Checks, one line
each, exit 1 if one fails: git am reproduces the quilt result; no
placeholder text (PROVISIONAL, FIGURES_) is left; checkpatch.pl
--strict of the tree passes on every mail (UNKNOWN_COMMIT_ID ignored:
the tree has no git history); git send-email --dry-run accepts them.

Environment: PC_TREE, POWERCLAMP_CACHE, POWERCLAMP_LOGS.
EOF
OUT_ARG=
while (($#)); do
	case "$1" in
	--tree)
		if (($# < 2)); then
			echo "${0##*/}: --tree needs a value (see --help)" >&2
			exit 2
		fi
		PC_TREE=$2
		shift 2
		;;
	*)
		if [ -n "$OUT_ARG" ]; then
			echo "${0##*/}: one OUTPUT_DIR only, not also '$1' (see --help)" >&2
			exit 2
		fi
		OUT_ARG=$1
		shift
		;;
	esac
done
export PC_TREE
unset PC_UNPATCHED   # the mails are the whole series, from the patched tree
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$PC_TREE" = 6.1 ]; then
	OUT=${OUT_ARG:-$LOG_DIR/series}
	WORK=$CACHE_DIR/export
else
	OUT=${OUT_ARG:-$LOG_DIR/series-$PC_TREE}
	WORK=$TREE_CACHE/export
fi
OUT=$(realpath -m -- "$OUT")   # git -C below would take it from elsewhere
COVER=$PATCHES_DIR/0000-cover-letter.txt
mapfile -t PATCHES < <(grep -v '^\s*\(#\|$\)' "$TREE_CONF/series" |
	sed "s|^|$PATCHES_DIR/|")

# placeholder_domain DOMAIN: whether DOMAIN is reserved for examples,
# documentation or tests (RFC 2606, RFC 6761), where no mail arrives
placeholder_domain() {
	case "${1,,}" in
	example.com | example.org | example.net | *.example.com | *.example.org | \
		*.example.net | example | *.example | invalid | *.invalid | test | *.test | \
		localhost | *.localhost) return 0 ;;
	esac
	return 1
}

# The mainline trees' mails are sent by whoever runs the export: refused,
# before anything is written, without a real identity to send them as.
SENDER=
if [ "$PC_TREE" != 6.1 ]; then
	SENDER_NAME=$(git config user.name || true)
	SENDER_EMAIL=$(git config user.email || true)
	if [ -z "$SENDER_NAME" ] || [ -z "$SENDER_EMAIL" ]; then
		die "git config user.name and user.email must name the sender of the mails (name '${SENDER_NAME}', email '${SENDER_EMAIL}'): nothing exported"
	fi
	if [[ "$SENDER_EMAIL" != ?*@?* ]] || placeholder_domain "${SENDER_EMAIL##*@}"; then
		die "git config user.email '$SENDER_EMAIL' is a placeholder address, not one to send the mails from: nothing exported"
	fi
	SENDER="$SENDER_NAME <$SENDER_EMAIL>"
	for f in Makefile MAINTAINERS scripts/get_maintainer.pl scripts/checkpatch.pl; do
		[ -f "$TREE_DIR/$f" ] ||
			die "no $f in $TREE_DIR (run PC_TREE=$PC_TREE scripts/prepare-tree.sh): nothing exported"
	done
	[ "$(cat "$TREE_DIR/.source-version" 2>/dev/null)" = "$SRC_VERSION" ] ||
		die "$TREE_DIR is not from $SRC_PACKAGE $SRC_VERSION (run PC_TREE=$PC_TREE scripts/prepare-tree.sh): nothing exported"
	[ -f "$COVER" ] || die "no cover letter at $COVER: nothing exported"
fi
installed=$(installed_version "$SRC_PACKAGE")
[ "$PC_TREE" = 6.1 ] || [ "$installed" = "$SRC_VERSION" ] ||
	die "$SRC_PACKAGE ${installed:-not installed}, the series wants $SRC_VERSION (run scripts/install-deps.sh): nothing exported"

# Files named in the patches' ---/+++ lines, as paths inside the tree.
touched_files() {
	sed -n 's@^\(---\|+++\) [ab]/\([^[:space:]]*\).*@\2@p' "${PATCHES[@]}" | sort -u
}

# pristine_repo DIR: a git repository holding the pristine version of every
# touched file; the tarball is read once per run, into DIR.pristine
pristine_repo() {
	local dir=$1 top files
	rm -rf "$dir"
	if [ ! -d "$WORK/pristine.run" ]; then
		mkdir -p "$WORK/pristine.run"
		top=$(basename "$SRC_TARBALL" .tar.xz)   # linux-source-6.1
		mapfile -t files < <(touched_files)
		tar -xJf "$SRC_TARBALL" -C "$WORK/pristine.run" --strip-components=1 \
			"${files[@]/#/$top/}" 2>/dev/null || true  # new files are absent
	fi
	mkdir -p "$dir"
	cp -a "$WORK/pristine.run/." "$dir/"
	git -C "$dir" init -q
	git -C "$dir" -c user.name=pristine -c user.email=pristine@localhost \
		add -A
	git -C "$dir" -c user.name=pristine -c user.email=pristine@localhost \
		commit -qm "$SRC_PACKAGE as shipped"
}

git_am() {
	git -C "$1" -c user.name=export -c user.email=export@localhost \
		am -q --keep-cr "${@:2}"
}

# as_sender PATCH OUT: PATCH with the sender as its author (its first
# From:) and in place of the author's own Signed-off-by
as_sender() {
	local author
	author=$(sed -n '1,/^$/s/^From: //p' "$1" | head -n 1)
	[ -n "$author" ] || die "${1##*/} has no From: line"
	AUTHOR=$author SENDER=$SENDER awk '
		BEGIN { author = ENVIRON["AUTHOR"]; sender = ENVIRON["SENDER"] }
		/^---$/ { message_done = 1 }
		!from_done && /^From: / { print "From: " sender; from_done = 1; next }
		!message_done && $0 == "Signed-off-by: " author { print "Signed-off-by: " sender; next }
		{ print }' "$1" >"$2"
}

# maintainers MAIL ROLE: the tree's get_maintainer.pl on MAIL, one address
# a line; ROLE "people" (maintainers and reviewers) or "lists"
maintainers() {
	local select=(--no-l)
	[ "$2" = lists ] && select=(--no-m --no-r)
	(cd "$TREE_DIR" && ./scripts/get_maintainer.pl --no-git --no-git-fallback \
		--no-rolestats "${select[@]}" "$1") | grep -vxF "$SENDER" || true
}

# add_headers MAIL TO CC: To: and Cc: (comma-separated lists, one address
# a line) into MAIL's header after its Subject: and the Subject's folded
# lines; the lists go to To: when TO is empty
add_headers() {
	local to=$2 cc=$3 headers=
	if [ -z "$to" ]; then
		to=$cc
		cc=
	fi
	[ -n "$to" ] || die "get_maintainer.pl names no one for ${1##*/}"
	headers="To: $(paste -sd '\t' <<<"$to" | sed 's/\t/,\n    /g')"
	[ -z "$cc" ] || headers="$headers
Cc: $(paste -sd '\t' <<<"$cc" | sed 's/\t/,\n    /g')"
	HEADERS=$headers awk '
		in_subject && !/^[ \t]/ { print ENVIRON["HEADERS"]; in_subject = 0; done = 1 }
		!done && !header_over && /^Subject:/ { in_subject = 1 }
		/^$/ { header_over = 1 }
		{ print }' "$1" >"$1.new"
	mv "$1.new" "$1"
}

# dedup: the lines of stdin, each once, in the order first seen
dedup() { awk '!seen[$0]++'; }

# header MAIL NAME: the value of MAIL's header NAME, its folded lines joined
header() {
	NAME=$2 awk '
		/^$/ { exit }
		found && /^[ \t]/ { sub(/^[ \t]+/, " "); value = value $0; next }
		found { exit }
		tolower(substr($0, 1, length(ENVIRON["NAME"]) + 1)) == tolower(ENVIRON["NAME"]) ":" {
			found = 1; value = substr($0, length(ENVIRON["NAME"]) + 3)
		}
		END { print value }' "$1"
}

# addresses: the number of addresses in the header value on stdin
addresses() { grep -o '@' | wc -l; }

QUILT_PATCHES=("${PATCHES[@]}")
if [ -n "$SENDER" ]; then
	rm -rf "$WORK/as-sender"
	mkdir -p "$WORK/as-sender"
	QUILT_PATCHES=()
	for p in "${PATCHES[@]}"; do
		as_sender "$p" "$WORK/as-sender/${p##*/}"
		QUILT_PATCHES+=("$WORK/as-sender/${p##*/}")
	done
fi
rm -rf "$WORK/pristine.run"

stage "export ($PC_TREE): git am the quilt patches onto the pristine files"
pristine_repo "$WORK/build"
git_am "$WORK/build" "${QUILT_PATCHES[@]}"

stage "export ($PC_TREE): git format-patch with the cover letter into $OUT"
rm -rf "$OUT"
subject=$(sed -n 's/^Subject: \[PATCH 0\/[0-9]*\] //p' "$COVER")
if [ -n "$SENDER" ]; then
	author_name=$SENDER_NAME author_email=$SENDER_EMAIL
else
	author=$(sed -n 's/^From: //p' "$COVER")
	email=${author##*<}
	author_name=${author% <*} author_email=${email%>}
fi
git -C "$WORK/build" -c user.name="$author_name" -c user.email="$author_email" \
	format-patch -q --cover-letter --thread=shallow \
	-o "$OUT" "HEAD~${#PATCHES[@]}"
letter=$(ls "$OUT"/0000-*.patch)
# Our subject and text replace format-patch's placeholders; its shortlog and
# diffstat stay. The text ends with the source the series applies to.
if [ "$PC_TREE" = 6.1 ]; then
	base="base: Debian $SRC_PACKAGE $SRC_VERSION"
else
	kver=$(awk -F' *= *' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
		$1 == "SUBLEVEL" { s = $2 } $1 == "EXTRAVERSION" { e = $2 }
		END { print v "." p "." s e }' "$TREE_DIR/Makefile")
	base="base: Linux $kver, as carried by Debian's $SRC_PACKAGE $SRC_VERSION"
fi
body="$(sed '1,/^$/d' "$COVER")

$base"
SUBJECT=$subject BODY=$body awk '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, ENVIRON["SUBJECT"]) }
	/\*\*\* BLURB HERE \*\*\*/ { print ENVIRON["BODY"]; next }
	{ print }' "$letter" >"$letter.new"
mv "$letter.new" "$letter"
mails=()
for f in "$OUT"/[0-9][0-9][0-9][0-9]-*.patch; do
	[ "$f" = "$letter" ] || mails+=("$f")
done

# To: and Cc: from the tree's MAINTAINERS, per patch and their union on the
# cover letter
if [ -n "$SENDER" ]; then
	all_people='' all_lists=''
	for f in "${mails[@]}"; do
		people=$(maintainers "$f" people)
		lists=$(maintainers "$f" lists)
		add_headers "$f" "$people" "$lists"
		all_people+=$people$'\n' all_lists+=$lists$'\n'
	done
	all_people=$(grep -v '^$' <<<"$all_people" | dedup || true)
	all_lists=$(grep -v '^$' <<<"$all_lists" | dedup | grep -vxFf <(echo "$all_people") || true)
	add_headers "$letter" "$all_people" "$all_lists"
	first_to=$(header "$letter" To | sed 's/,.*//')
fi
for f in "$OUT"/*; do
	if [ -n "$SENDER" ]; then
		info "${f##*/}: To: $(header "$f" To | addresses), Cc: $(header "$f" Cc | addresses)"
	else
		info "${f##*/}"
	fi
done

stage "export ($PC_TREE): git am the exported mails onto a fresh pristine tree"
pristine_repo "$WORK/verify"
rm -rf "$WORK/pristine.run"
failed=0
if ! git_am "$WORK/verify" "${mails[@]}"; then
	info "FAILED: git am does not apply the exported series"
	failed=1
elif diff -r -q -x .git "$WORK/build" "$WORK/verify" >/dev/null; then
	info "the exported series applies with git am and gives the same tree"
else
	info "FAILED: the exported series does not reproduce the quilt result"
	failed=1
fi
if [ -z "$SENDER" ]; then
	((failed == 0)) || die "the exported series does not reproduce the quilt result"
	exit 0
fi

stage "export ($PC_TREE): the mails as they would be sent"
# placeholder text that the messages carry until their figures are measured
if left=$(grep -l 'PROVISIONAL\|FIGURES_' "$letter" "${mails[@]}"); then
	info "FAILED: placeholder text (PROVISIONAL, FIGURES_) left in $(echo "$left" | xargs -n 1 basename | paste -sd ' ')"
	failed=1
else
	info "no placeholder text (PROVISIONAL, FIGURES_) in the $((${#mails[@]} + 1)) mails"
fi
# The tree is the distro's tarball, without git history: checkpatch then
# reports every "Fixes:" id as unknown, so that one type is left out (as
# scripts/lint.sh does).
bad=()
for f in "$letter" "${mails[@]}"; do
	out=$(cd "$TREE_DIR" && ./scripts/checkpatch.pl --strict --quiet \
		--ignore UNKNOWN_COMMIT_ID "$f" 2>&1) || bad+=("${f##*/}")
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/        /'
done
if ((${#bad[@]} == 0)); then
	info "checkpatch.pl --strict ($PC_TREE tree): the $((${#mails[@]} + 1)) mails pass"
else
	info "FAILED: checkpatch.pl --strict ($PC_TREE tree): ${bad[*]}"
	failed=1
fi
log=$WORK/send-email-dry-run.log
if ! perl -MMail::Address -e 1 2>/dev/null; then
	# git-email's Debian package only recommends it, and send-email needs
	# it for every address it reads
	info "FAILED: git send-email --dry-run: Perl's Mail::Address is missing (libmailtools-perl: scripts/install-deps.sh)"
	failed=1
elif (cd "$WORK/build" && git send-email --dry-run --confirm=never \
	--suppress-cc=all --from "$SENDER" --to "$first_to" \
	"$letter" "${mails[@]}") </dev/null >"$log" 2>&1; then
	info "git send-email --dry-run: $(grep -c '^Dry-OK' "$log") mails accepted, from $SENDER to $first_to ($log)"
else
	info "FAILED: git send-email --dry-run: $(tail -n 1 "$log") ($log)"
	failed=1
fi
((failed == 0)) || die "the export of the $PC_TREE series failed a check (above)"
