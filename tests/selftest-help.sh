#!/usr/bin/env bash
# Proves that every command answers --help on a bare machine before it does
# anything: each of scripts/*.sh (but lib.sh and verdict.sh, which are
# sourced), scripts/ktap-parse.py, run-qemu.sh, ./check.sh and tests/run.sh
# runs with stand-ins for apt-get, apt-cache, quilt, debootstrap,
# qemu-system-x86_64, make, flock and pgrep ahead of the real ones on PATH,
# which fail loudly and note that they ran, and with a POWERCLAMP_CACHE and
# POWERCLAMP_LOGS that must still not exist afterwards. --help must exit 0
# within 2 s with a text on stdout that starts with "usage:" or "Usage:",
# and -h print the same; --no-such-option must exit 2 with one line on
# stderr. Needs no root, no kernel tree and nothing installed.
set -euo pipefail
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(dirname "$TESTS_DIR")
# shellcheck source=lib/ktap.sh
. "$REPO_DIR/lib/ktap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

STANDINS=(apt-get apt-cache quilt debootstrap qemu-system-x86_64 make flock pgrep)
mkdir "$work/bin" "$work/cwd"
for tool in "${STANDINS[@]}"; do
	printf '#!/bin/sh\necho "stand-in %s: run by a command asked for --help" >&2\necho "%s $*" >>"%s"\nexit 97\n' \
		"$tool" "$tool" "$work/ran" >"$work/bin/$tool"
	chmod +x "$work/bin/$tool"
done
CACHE=$work/cache
LOGS=$work/out

COMMANDS=()
for f in "$REPO_DIR"/scripts/*.sh; do
	case "${f##*/}" in
	lib.sh | verdict.sh) ;;
	*) COMMANDS+=("scripts/${f##*/}") ;;
	esac
done
COMMANDS+=(scripts/ktap-parse.py run-qemu.sh check.sh tests/run.sh)

# run NAME COMMAND ARG: the command from an empty folder with the stand-ins;
# its status in $work/NAME.rc, its output in $work/NAME.out and .err
run() {
	local rc=0
	(cd "$work/cwd" && PATH=$work/bin:$PATH POWERCLAMP_CACHE=$CACHE \
		POWERCLAMP_LOGS=$LOGS timeout 2 "$REPO_DIR/$2" "$3") \
		>"$work/$1.out" 2>"$work/$1.err" </dev/null || rc=$?
	echo "$rc" >"$work/$1.rc"
}

# side_effects: what a command did that it must not have, or nothing
side_effects() {
	local what=() made
	[ ! -s "$work/ran" ] || what+=("ran $(paste -sd, "$work/ran")")
	[ ! -e "$CACHE" ] || what+=("made POWERCLAMP_CACHE")
	[ ! -e "$LOGS" ] || what+=("made POWERCLAMP_LOGS")
	made=$(find "$work/cwd" -mindepth 1 -maxdepth 1 -printf '%f\n' | paste -sd,)
	[ -z "$made" ] || what+=("wrote $made in its folder")
	rm -rf "$work/ran" "$CACHE" "$LOGS" "$work/cwd"
	mkdir "$work/cwd"
	local IFS=';'
	echo "${what[*]}"
}

ktap_begin "$((2 * ${#COMMANDS[@]}))"
for cmd in "${COMMANDS[@]}"; do
	run help "$cmd" --help
	effects=$(side_effects)
	run h "$cmd" -h
	h_effects=$(side_effects)
	effects=${effects:-$h_effects}
	rc=$(cat "$work/help.rc")
	if ((rc != 0)); then
		ktap_not_ok "$cmd --help" "exit $rc, want 0: $(head -n 1 "$work/help.err")"
	elif ! head -n 1 "$work/help.out" | grep -q '^[Uu]sage: '; then
		ktap_not_ok "$cmd --help" "stdout does not start with 'usage:': '$(head -n 1 "$work/help.out")'"
	elif ! cmp -s "$work/help.out" "$work/h.out" || [ "$(cat "$work/h.rc")" != 0 ]; then
		ktap_not_ok "$cmd -h" "exit $(cat "$work/h.rc"), or another text than --help"
	elif [ -n "$effects" ]; then
		ktap_not_ok "$cmd --help" "$effects"
	else
		ktap_ok "$cmd --help: $(wc -l <"$work/help.out") lines of usage, nothing run or made"
	fi

	run bad "$cmd" --no-such-option
	effects=$(side_effects)
	rc=$(cat "$work/bad.rc") lines=$(wc -l <"$work/bad.err")
	if ((rc != 2)); then
		ktap_not_ok "$cmd --no-such-option" "exit $rc, want 2: $(head -n 1 "$work/bad.err")"
	elif ((lines != 1)); then
		ktap_not_ok "$cmd --no-such-option" "$lines lines on stderr, want 1"
	elif [ -n "$effects" ]; then
		ktap_not_ok "$cmd --no-such-option" "$effects"
	else
		ktap_ok "$cmd --no-such-option refused: $(cat "$work/bad.err")"
	fi
done
ktap_end
((KTAP_FAILED == 0))
