# The suite's verdict: results from parsed KTAP documents, added up here.
# Sourced by scripts/test.sh (and by tests/selftest-boot.sh, which runs a
# boot against a stand-in QEMU), after scripts/lib.sh. Never run.
# shellcheck shell=bash
# shellcheck disable=SC2034  # the counters and current are read by test.sh

passed=0
failed=0
skipped=0
declare -A reported=()
retries=()
# What boots a guest; the self-test puts a stand-in here.
RUN_QEMU=${RUN_QEMU:-$REPO_DIR/run-qemu.sh}

fail_line() { failed=$((failed + 1)); echo "not ok - $*"; }
pass_line() { passed=$((passed + 1)); echo "ok - $*"; }

# judge DOC LOG STATUS [EXPECT]: count the KTAP document in LOG as DOC's
# results. STATUS is the producer's exit status: non-zero with no failing
# result in the document is a failure too. EXPECT, comma-separated, is the
# list of top-level names the document must have.
judge() {
	local doc=$1 log=$2 status=$3 out p f s rc=0
	out=$(python3 "$REPO_DIR/scripts/ktap-parse.py" --name "$doc" \
		${4:+--expect "$4"} "$log") || rc=$?
	printf '%s\n' "$out" | grep '^not ok - ' || true
	if ! [[ $(tail -n 1 <<<"$out") =~ ^[^:]+:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		fail_line "$doc: the KTAP parser gave no verdict: $(tail -n 1 <<<"$out")"
		reported[$doc]=1
		return
	fi
	p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if ((status != 0 && rc == 0)); then
		fail_line "$doc: exited with status $status but reported no failure"
	fi
	echo "# $doc: $p passed, $f failed, $s skipped"
	reported[$doc]=1
}

# ktap_stage DOC SCRIPT: run a host script that prints a KTAP document
ktap_stage() {
	local doc=$1 log=$LOG_DIR/$1.log status=0
	shift
	"$@" >"$log" 2>&1 || status=$?
	cat "$log"
	judge "$doc" "$log" "$status"
}

# single DOC DESCRIPTION COMMAND...: a stage with one result
single() {
	local doc=$1 desc=$2
	shift 2
	if "$@"; then pass_line "$doc: $desc"; else fail_line "$doc: $desc"; fi
	reported[$doc]=1
}

# boot_once BOOT CONSOLE KTAP: boot BOOT of guest/boots; prints the verdict
# of run-qemu.sh (0 pass, 1 checks failed, 2 crashed, hung or splat)
boot_once() {
	local boot=$1 kernel debug=0 verdict=0
	kernel=$(boot_field "$boot" kernel)
	[ "$kernel" = test ] && debug=1
	PC_KERNEL=$kernel "$RUN_QEMU" --mode test \
		--emulator "$(boot_field "$boot" emulator)" \
		--smp "$(boot_field "$boot" smp)" --cpu "$(boot_field "$boot" cpu)" \
		--timeout "$(boot_field "$boot" timeout)" --log "$2" --ktap "$3" \
		--append "pc.checks=$(boot_checks "$boot") pc.debug=$debug $(boot_field "$boot" append)" \
		>&2 || verdict=$?
	echo "$verdict"
}

# console_clean BOOT CONSOLE: one result, the console free of kernel splats
console_clean() {
	if "$REPO_DIR/scripts/scan-console.sh" "$2"; then
		pass_line "$1: guest console free of kernel splats ($(basename "$2"))"
	else
		fail_line "$1: kernel splat on the guest console ($(basename "$2"), see above)"
	fi
}

# run_boot BOOT: boot it, judge its KTAP against its registry entry, scan
# its console. A boot is booted again only when it never started its checks
# and its console shows a stall of the emulated machine that
# scripts/known-stalls names; the first console is scanned as well, and the
# retry is reported in the summary.
run_boot() {
	local boot=$1 console=$LOG_DIR/console-$1.log ktap=$LOG_DIR/ktap-$1.log verdict sig
	current="guest ($boot)"
	verdict=$(boot_once "$boot" "$console" "$ktap")
	if ((verdict == 2)) && ! grep -q '^KTAP version 1' "$ktap" 2>/dev/null &&
		sig=$(known_stall "$console"); then
		echo "# $boot: never reached its checks, stalled with '$sig'; booting once more"
		retries+=("$boot ($sig)")
		mv "$console" "$console.first"
		console_clean "$boot" "$console.first"
		verdict=$(boot_once "$boot" "$console" "$ktap")
	fi
	judge "$boot" "$ktap" "$((verdict == 1))" "$(boot_checks "$boot")"
	console_clean "$boot" "$console"
	((verdict != 2)) || fail_line "$boot: guest crashed, hung, printed a splat or never reported"
}
