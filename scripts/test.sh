#!/usr/bin/env bash
# Runs every MPSurf test: Go unit and integration tests, short fuzz runs of every parser, vitest, Mozilla's linter on
# the Firefox build, and the end-to-end tests in real Chromium and Firefox ESR. Tests that need root or MPTCP skip
# with a reason when those are absent.
set -uo pipefail
cd "$(dirname "$0")/.."
usage='usage: npm test   (bash scripts/test.sh): go vet, go test, short fuzz runs, tsc, vitest, web-ext lint, the end-to-end tests, the Debian packages'
case ${1-} in -h | --help) echo "$usage"; exit 0 ;; ?*) echo "test.sh: unknown argument ${1} (--help shows usage)" >&2; exit 2 ;; esac

bash scripts/setup.sh || exit 1

passed=0 failed=0 names=()
stage() {
  local name=$1; shift
  printf '\n\033[1m== %s\033[0m\n' "$name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); names+=("$name"); fi
}

fuzz_all() {
  # Every testing.F target gets a short run; the corpus in testdata/ keeps what earlier runs found.
  # An execution count rather than a duration: Go 1.26's coordinator can report a spurious
  # "context deadline exceeded" when a duration runs out under load (go.dev/issue/75804).
  local secs=${MPSURF_FUZZTIME:-20000x} pkg name rc=0
  for pkg in $(go list ./...); do
    for name in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz'); do
      echo "fuzz $pkg $name ($secs)"
      go test -run='^$' -fuzz="^${name}\$" -fuzztime="$secs" "$pkg" >/tmp/mpsurf-fuzz.log 2>&1 \
        || { cat /tmp/mpsurf-fuzz.log; rc=1; }
    done
  done
  return $rc
}

stage "go vet" go vet ./...
stage "go test" go test -count=1 -timeout 20m ./...
stage "go fuzz (short)" fuzz_all
stage "tsc (extension types, tests included)" npx tsc --noEmit -p extension
stage "vitest" npx vitest run --root extension
# Mozilla's linter (addons-linter, as addons.mozilla.org runs it) on the Firefox build: errors fail the stage.
stage "web-ext lint (Firefox build)" npx web-ext lint --source-dir dist/extension-firefox --no-config-discovery --boring
stage "end-to-end (Chromium, Firefox)" node --test --test-concurrency=1 e2e/
stage "Debian packages (build, lintian, contents)" bash packaging/test-packages

echo
((failed)) && echo "failed stages: ${names[*]}"
echo "stages: ${passed} passed, ${failed} failed"
((failed == 0))
