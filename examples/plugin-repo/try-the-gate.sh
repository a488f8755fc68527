#!/usr/bin/env bash
# The gate from a team's side, end to end, in a copy of this folder: ctxbench installed as a
# package (`pip install ctxbench...` or a wheel), this package installed with `pip install -e .`,
# no PYTHONPATH. Run it from a scratch copy:
#   cp -r examples/plugin-repo /tmp/acme && cd /tmp/acme && pip install -e . && ./try-the-gate.sh
# Each step says what it expects; the script stops at the first step that does not hold.
set -u
cd "$(dirname "$0")"
unset PYTHONPATH
CODE=src/acme_agent/compaction.py
cp "$CODE" /tmp/acme-compaction.v1.py
step() { printf '\n== %s\n' "$*"; }
expect() {  # expect CODE COMMAND...: run it, fail unless it exits with CODE
    local want=$1; shift
    "$@"; local got=$?
    if [ "$got" != "$want" ]; then echo "FAILED: expected exit $want, got $got: $*"; exit 1; fi
}

step "1. sweep v1 and record the baseline (and its events, beside it)"
rm -rf gate-results v2-results refactor-results
expect 0 ctxbench sweep ctxbench/gate.toml -o gate-results --allow-plugins --quiet
expect 0 ctxbench baseline gate-results -o ctxbench/baseline.json

step "2. v2 keeps half as many messages: check fails"
sed -i 's/messages\[-keep_last:\]/messages[-(keep_last \/\/ 2):]/' "$CODE"
expect 0 ctxbench sweep ctxbench/gate.toml -o v2-results --allow-plugins --quiet
ctxbench check v2-results --baseline ctxbench/baseline.json | tee check.txt
[ "${PIPESTATUS[0]}" = 1 ] || { echo "FAILED: check should exit 1"; exit 1; }

step "   ...and its diff hint works without the old results folder (as in CI)"
mv gate-results /tmp/acme-gate-results.away
hint=$(grep -m1 '^  ctxbench diff' check.txt)
echo "$hint"
expect 0 bash -c "$hint | head -12"
mv /tmp/acme-gate-results.away gate-results

step "3. a same-behaviour refactor of v1 passes"
cp /tmp/acme-compaction.v1.py "$CODE"
sed -i 's/def size(/def rough_tokens(/; s/if size(messages)/if rough_tokens(messages)/' "$CODE"
expect 0 ctxbench sweep ctxbench/gate.toml -o refactor-results --allow-plugins --quiet
expect 0 ctxbench check refactor-results --baseline ctxbench/baseline.json

step "4. v2 resumed into v1's folder: the changed cells run again, and the gate fails"
cp /tmp/acme-compaction.v1.py "$CODE"
sed -i 's/messages\[-keep_last:\]/messages[-(keep_last \/\/ 2):]/' "$CODE"
expect 0 ctxbench sweep ctxbench/gate.toml -o gate-results --allow-plugins --quiet --resume
expect 1 ctxbench check gate-results --baseline ctxbench/baseline.json

cp /tmp/acme-compaction.v1.py "$CODE"
step "all steps held"
