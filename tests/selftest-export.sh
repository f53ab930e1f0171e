#!/usr/bin/env bash
# Proves that scripts/export-series.sh --tree 7.3 refuses to export mails
# from a placeholder identity (this machine's git config is one: exit 1, one
# line on stderr, nothing written), and that with a real-looking sender it
# writes the cover letter and the 5 patches, each with To:, the sender in
# From: (and in Signed-off-by: on the patches, the patches' own author
# gone), the base in the cover letter, and that its checks pass (exit 0).
# The identities are given to git through GIT_CONFIG_COUNT, never stored.
# Needs the patched 7.3 tree in the cache (PC_TREE=7.3
# scripts/prepare-tree.sh), skipped without it; the last result (the
# checks, git send-email's among them) is skipped without Perl's
# Mail::Address.
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(dirname "$TESTS_DIR")
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"
TREE=${POWERCLAMP_CACHE:-/var/tmp/powerclamp-cache}/tree-7.3/linux
work=$(mktemp -d)
# the export's git am trees hold commits by the test sender: not kept
trap 'rm -rf "$work" "${TREE%/linux}/export"' EXIT
SENDER_NAME="Ada Tester" SENDER_EMAIL=ada@kernel.org
# the patches' own author, which is this machine's git config identity
PLACEHOLDER_NAME="Seed 3fe2db62 maintainers"
PLACEHOLDER_EMAIL=maintainers@users.noreply.a-seed-3fe2db62.example

if [ ! -f "$TREE/Makefile" ]; then
	ktap_begin 1
	ktap_skip "export of the 7.3 series" "no tree at $TREE (PC_TREE=7.3 scripts/prepare-tree.sh)"
	ktap_end
	exit 0
fi

# export NAME EMAIL OUT: the export as that git identity (EMAIL empty:
# user.email unset), status in $work/rc, output in $work/out and $work/err
export_as() {
	local rc=0 env=(GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_COUNT=1
		GIT_CONFIG_KEY_0=user.name "GIT_CONFIG_VALUE_0=$1")
	[ -z "$2" ] || env+=(GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_1=user.email "GIT_CONFIG_VALUE_1=$2")
	env "${env[@]}" "$REPO_DIR/scripts/export-series.sh" --tree 7.3 "$3" \
		>"$work/out" 2>"$work/err" </dev/null || rc=$?
	echo "$rc" >"$work/rc"
}

# refused WHAT: the last export exited 1 with one line on stderr and wrote
# no output folder
refused() {
	local rc lines
	rc=$(cat "$work/rc") lines=$(wc -l <"$work/err")
	if ((rc == 1)) && ((lines == 1)) && [ ! -e "$work/refused" ]; then
		ktap_ok "refused $1: $(cat "$work/err")"
	else
		ktap_not_ok "refused $1" "exit $rc, $lines lines on stderr, output folder $([ -e "$work/refused" ] && echo written || echo absent)"
		sed 's/^/# /' "$work/err"
	fi
	rm -rf "$work/refused"
}

PLACEHOLDERS=(example.com example.org example.net lab.example host.invalid ci.test box.localhost localhost)
ktap_begin "$((2 + ${#PLACEHOLDERS[@]} + 5))"
export_as "$PLACEHOLDER_NAME" "$PLACEHOLDER_EMAIL" "$work/refused"
refused "this machine's identity ($PLACEHOLDER_EMAIL)"
export_as "$SENDER_NAME" "" "$work/refused"
refused "an unset user.email"
for domain in "${PLACEHOLDERS[@]}"; do
	export_as "$SENDER_NAME" "ada@$domain" "$work/refused"
	refused "@$domain"
done

out=$work/series
export_as "$SENDER_NAME" "$SENDER_EMAIL" "$out"
rc=$(cat "$work/rc")
mapfile -t mails < <(cd "$out" 2>/dev/null && ls -- [0-9][0-9][0-9][0-9]-*.patch)
patch_count=$(grep -c . "$REPO_DIR/trees/7.3/series")
if ((${#mails[@]} == patch_count + 1)); then
	ktap_ok "$((patch_count + 1)) mails: the cover letter and the series' $patch_count patches"
else
	ktap_not_ok "$((patch_count + 1)) mails" "${#mails[@]} in $out"
fi
missing=()
for m in "${mails[@]}"; do
	sed '/^$/q' "$out/$m" | grep -q '^To: .*@' || missing+=("$m")
done
if ((${#mails[@]} > 0)) && ((${#missing[@]} == 0)); then
	ktap_ok "each mail has To:"
else
	ktap_not_ok "each mail has To:" "none in ${missing[*]:-(no mail)}"
fi
missing=()
for m in "${mails[@]}"; do
	sender="$SENDER_NAME <$SENDER_EMAIL>"
	sed '/^$/q' "$out/$m" | grep -qxF "From: $sender" || missing+=("$m: From")
	case "$m" in
	0000-*) ;;
	*) grep -qxF "Signed-off-by: $sender" "$out/$m" || missing+=("$m: Signed-off-by") ;;
	esac
	! grep -qF "$PLACEHOLDER_EMAIL" "$out/$m" || missing+=("$m: the patches' own author")
done
if ((${#mails[@]} > 0)) && ((${#missing[@]} == 0)); then
	ktap_ok "the sender in each From: and Signed-off-by:, the patches' own author gone"
else
	ktap_not_ok "the sender in From: and Signed-off-by:" "${missing[*]:-(no mail)}"
fi
if grep -qx "base: Linux 7\.3\.[0-9]*, as carried by Debian's linux-source-7\.3 .*" \
	"$out"/0000-*.patch 2>/dev/null; then
	ktap_ok "the cover letter ends with the base: $(grep '^base: ' "$out"/0000-*.patch)"
else
	ktap_not_ok "the base in the cover letter" "no 'base: Linux 7.3.N, ...' line"
fi
if ! perl -MMail::Address -e 1 2>/dev/null; then
	ktap_skip "the export's checks pass" "no Perl Mail::Address for git send-email (libmailtools-perl: scripts/install-deps.sh)"
elif ((rc == 0)); then
	ktap_ok "the export's checks pass (git am, placeholders, checkpatch, send-email --dry-run)"
else
	ktap_not_ok "the export's checks" "exit $rc"
	grep 'FAILED\|ERROR' "$work/out" "$work/err" | sed 's/^/# /' || true
fi
ktap_end
((KTAP_FAILED == 0))
