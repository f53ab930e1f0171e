# shellcheck shell=bash
# --help and the refusal of unknown options for the commands (scripts/*.sh,
# run-qemu.sh), in one place so that each command needs two lines for them.
# Sourced first thing, before scripts/lib.sh: answering --help needs
# nothing installed and changes nothing (no cache, no lock, no apt).
# Host side only; bash only.
#
#	usage_or_refuse [OPTION...] [ARGS] -- "$@" <<'EOF'
#	usage: scripts/NAME.sh ...
#	EOF
#
# OPTION is an option the command takes, written with a trailing '=' when
# it takes a value ("--smp="), which is then not looked at; ARGS says that
# the command also takes arguments that are not options. -h or --help
# anywhere prints the here-document on stdout and exits 0. Otherwise an
# argument that starts with '-' and is no OPTION, or, without ARGS, any
# argument that is no option's value, is refused with one line on stderr
# and exit status 2. With nothing to answer or refuse it returns, and the
# command parses its arguments as it always has.

usage_or_refuse() {
	local -A takes=()
	local spec arg line positional=0 value_next=0 help=0 refusal=""
	while (($#)); do
		spec=$1
		shift
		case "$spec" in
		--) break ;;
		ARGS) positional=1 ;;
		*=) takes[${spec%=}]=value ;;
		*) takes[$spec]=flag ;;
		esac
	done
	for arg in "$@"; do
		if ((value_next)); then
			value_next=0
			continue
		fi
		case "$arg" in
		-h | --help) help=1 ;;
		-?*)
			case "${takes[$arg]:-}" in
			value) value_next=1 ;;
			flag) ;;
			*) refusal=${refusal:-"unknown option '$arg'"} ;;
			esac
			;;
		*) ((positional)) || refusal=${refusal:-"unexpected argument '$arg'"} ;;
		esac
	done
	if ((help)); then
		while IFS= read -r line || [ -n "$line" ]; do
			printf '%s\n' "$line"
		done
		exit 0
	fi
	if [ -n "$refusal" ]; then
		printf '%s: %s (see --help)\n' "${0##*/}" "$refusal" >&2
		exit 2
	fi
}
