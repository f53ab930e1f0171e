#!/usr/bin/env bash
# The host stage of the suite: every tests/selftest-*.sh, each one's KTAP
# document nested as a subtest of this one, after a first result holding
# their number to SELFTESTS_FLOOR. Needs no root and no kernel.
set -euo pipefail
# shellcheck source=lib/usage.sh
. "$(dirname "$0")/../lib/usage.sh"
usage_or_refuse -- "$@" <<'EOF'
usage: tests/run.sh

The host stage of the suite: runs every tests/selftest-*.sh, the harness
fed known-bad input to show that it can fail, and prints one KTAP
document with each self-test's document nested as a subtest; exits 1 if
one failed. Needs no root, no kernel and no guest. Takes no arguments.
EOF
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
# The least number of self-tests this stage may find: one deleted (or
# misnamed) fails the stage until this is lowered with it, on purpose.
SELFTESTS_FLOOR=7
# shellcheck source=lib/ktap.sh
. "$TESTS_DIR/../lib/ktap.sh"

mapfile -t SELFTESTS < <(cd "$TESTS_DIR" && ls -- selftest-*.sh)
ktap_begin "$((${#SELFTESTS[@]} + 1))"
if ((${#SELFTESTS[@]} >= SELFTESTS_FLOOR)); then
	ktap_ok "${#SELFTESTS[@]} self-tests found, the floor is $SELFTESTS_FLOOR"
else
	ktap_not_ok "${#SELFTESTS[@]} self-tests found, below the floor of $SELFTESTS_FLOOR"
fi
for t in "${SELFTESTS[@]}"; do
	rc=0
	out=$(bash "$TESTS_DIR/$t" 2>&1) || rc=$?
	printf '%s\n' "$out" | sed 's/^/    /'
	if ((rc == 0)); then ktap_ok "${t%.sh}"; else ktap_not_ok "${t%.sh}" "exit $rc"; fi
done
ktap_end
((KTAP_FAILED == 0))
