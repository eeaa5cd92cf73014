#!/usr/bin/env bash
# Builds nacc with AddressSanitizer + UndefinedBehaviorSanitizer and with
# ThreadSanitizer into build/asan/nacc and build/tsan/nacc (python/nacc is not
# touched) and runs tests against them (docs/reliability.md).
#
#   tools/run_sanitizers.sh [asan|tsan|both] [pytest arguments...]
#
# Default tests: asan the whole default suite; tsan the thread subset TSAN_TESTS
# below (the whole suite under TSan takes hours here). Extra arguments replace the
# test selection. Environment:
#   NACC_SAN_TARGETS  devbuild targets to instrument (default "core delegate ep");
#                     a target left out is copied uninstrumented from python/nacc.
#   NACC_BUILD_JOBS   parallel compile jobs (devbuild.py; default 2).
# The Python process gets the sanitizer runtime by LD_PRELOAD (it must be loaded
# first); suppressions: tools/sanitizers/*.supp (third-party frames only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The real interpreter: a pyenv shim is a bash script, and the sanitizer runtime
# must be preloaded into Python, not into bash.
PY="$(python3 -c 'import sys; print(sys.executable)')"
WHICH="${1:-both}"
shift || true
TARGETS="${NACC_SAN_TARGETS:-core delegate ep}"
SUPP="$ROOT/tools/sanitizers"

TSAN_TESTS=(
  tests/test_reliability.py::test_concurrency
  tests/test_runtime.py::test_more_concurrent_runs_than_handlers
  tests/test_delegate_e2e.py::test_two_interpreters_in_two_threads
  tests/test_delegate_e2e.py::test_cores_and_threads_give_the_same_bits
  "tests/test_reliability.py::test_delegate_fault_is_an_error_and_the_interpreter_recovers"
  "tests/test_reliability.py::test_ep_fault_is_an_error_and_the_session_recovers"
)

build() {  # name NACC_SANITIZE-value
  local name="$1" value="$2" pkg="$ROOT/build/$1"
  mkdir -p "$pkg/nacc"
  echo "== building $name ($value): $TARGETS -> $pkg/nacc"
  (cd "$ROOT" && NACC_SANITIZE="$value" NACC_DEV_OUT="$pkg/nacc" "$PY" tools/devbuild.py $TARGETS)
  cp "$ROOT"/python/nacc/*.py "$pkg/nacc/"
  for t in core delegate ep; do
    if [[ " $TARGETS " != *" $t "* ]]; then
      case "$t" in
        core) cp "$ROOT"/python/nacc/_core*.so "$pkg/nacc/" ;;
        delegate) cp "$ROOT/python/nacc/libnacc_tflite_delegate.so" "$pkg/nacc/" ;;
        ep) cp "$ROOT/python/nacc/libnacc_ort_ep.so" "$pkg/nacc/" ;;
      esac
      echo "   ($t: uninstrumented copy of python/nacc)"
    fi
  done
}

run_tests() {  # name preload-library env-assignments... -- pytest-args...
  local name="$1" lib="$2"
  shift 2
  local envs=()
  while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
  shift
  local start end
  start=$(date +%s)
  echo "== $name: pytest $*"
  set +e
  # NACC_SANITIZER: tests that measure RSS skip that check (ASan's quarantine holds
  # freed memory); see tests/test_reliability.py.
  (cd "$ROOT" && env "${envs[@]}" NACC_SANITIZER="$name" PYTHONPATH="$ROOT/build/$name" LD_PRELOAD="$lib" \
     "$PY" -m pytest -q -p no:cacheprovider "$@")
  local rc=$?
  set -e
  end=$(date +%s)
  echo "== $name: exit $rc after $((end - start)) s"
  return $rc
}

status=0
if [[ "$WHICH" == asan || "$WHICH" == both ]]; then
  build asan address,undefined
  args=("$@")
  [[ ${#args[@]} -eq 0 ]] && args=(tests)
  # detect_leaks=0: LeakSanitizer reports Python's and TensorFlow's deliberate
  # exit-time leaks, and a leak suppression cannot be limited to their frames (every
  # nacc allocation has Python frames under it); leaks are covered by the RSS tests.
  # libstdc++ preloaded too: ASan resolves its __cxa_throw interceptor at start-up,
  # and Python itself does not link libstdc++ (the first C++ exception thrown by
  # an extension, e.g. matplotlib's under TensorFlow, would hit a CHECK failure).
  run_tests asan "$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" \
    ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:strict_init_order=1:detect_stack_use_after_return=0" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPP/ubsan.supp" \
    -- "${args[@]}" || status=1
fi
if [[ "$WHICH" == tsan || "$WHICH" == both ]]; then
  build tsan thread
  args=("$@")
  [[ ${#args[@]} -eq 0 ]] && args=("${TSAN_TESTS[@]}")
  run_tests tsan "$(gcc -print-file-name=libtsan.so)" \
    TSAN_OPTIONS="suppressions=$SUPP/tsan.supp:halt_on_error=0:exitcode=66:report_signal_unsafe=0:second_deadlock_stack=1:history_size=4" \
    -- "${args[@]}" || status=1
fi
exit $status
