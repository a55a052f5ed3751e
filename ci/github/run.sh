#!/usr/bin/env bash
# The GitHub Action's main step (action.yml): check the profile, run the command under
# `sbx enforce`, write the job summary, set the step outputs, exit with sbx's status.
#
# Inputs (environment): INPUT_PROFILE, INPUT_COMMAND (split into words like a shell would,
# quotes and backslashes included, but never expanded or evaluated: no variables, globs or
# command substitution), INPUT_MODE (kill, deny or audit), INPUT_REPORT, INPUT_SARIF,
# INPUT_TRACE, INPUT_TIMEOUT (empty: none), INPUT_WORKING_DIRECTORY. sbx must be on PATH
# (SBX overrides).
#
# With GITHUB_ACTIONS=true, sbx itself prints one `::error` (`::warning` in audit mode)
# workflow command per violation, on the profile's line where the rule would go.
set -euo pipefail

sbx="${SBX:-sbx}"
fail() { echo "::error title=sbx::$*" >&2; exit 2; }
: "${INPUT_PROFILE:?the profile input is required}"
: "${INPUT_COMMAND:?the command input is required}"
mode="${INPUT_MODE:-kill}"
case "$mode" in
  kill | deny | audit) ;;
  *) fail "mode must be kill, deny or audit (got '$mode')" ;;
esac
report="${INPUT_REPORT:-sbx-report.json}"
if [ -n "${INPUT_WORKING_DIRECTORY:-}" ]; then cd "$INPUT_WORKING_DIRECTORY"; fi

# Shell-like word splitting without evaluation: xargs honours quotes and backslashes.
printf '%s\n' "$INPUT_COMMAND" | xargs -r printf '' >/dev/null 2>&1 \
  || fail "cannot split the command input into words (unbalanced quotes?)"
argv=()
while IFS= read -r -d '' word; do argv+=("$word"); done \
  < <(printf '%s\n' "$INPUT_COMMAND" | xargs -r printf '%s\0')
[ "${#argv[@]}" -gt 0 ] || fail "the command input is empty"

"$sbx" check "$INPUT_PROFILE" || fail "the profile $INPUT_PROFILE is not valid (see above)"

args=(enforce --mode "$mode" --report "$report")
if [ -n "${INPUT_SARIF:-}" ]; then args+=(--sarif "$INPUT_SARIF"); fi
if [ -n "${INPUT_TRACE:-}" ]; then args+=(-o "$INPUT_TRACE"); fi
if [ -n "${INPUT_TIMEOUT:-}" ]; then args+=(--timeout "$INPUT_TIMEOUT"); fi
set +e
"$sbx" "${args[@]}" "$INPUT_PROFILE" -- "${argv[@]}"
code=$?
set -e

if [ -s "$report" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  "$sbx" report --format summary "$report" >>"$GITHUB_STEP_SUMMARY" \
    || echo "::warning title=sbx::cannot write the job summary from $report"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$code"
    echo "report=$report"
    if [ -n "${INPUT_SARIF:-}" ]; then echo "sarif=$INPUT_SARIF"; fi
  } >>"$GITHUB_OUTPUT"
fi
exit "$code"
