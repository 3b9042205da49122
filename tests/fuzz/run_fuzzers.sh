#!/usr/bin/env bash
# Fuzzes Kestrel's readers of outside data with libFuzzer, one target after another.
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]
#   tests/fuzz/run_fuzzers.sh build-asan 600               # ten minutes each, every target
#   tests/fuzz/run_fuzzers.sh build-asan 30 idx tfrecord   # what CI does, for two targets
#
# BUILD_DIR is a clang build configured with -DKESTREL_BUILD_FUZZERS=ON and the sanitizers (see
# .ci/run); the targets are built here if needed. Each target starts from its seed corpus
# (tests/fuzz/corpus/<target>) and its known crashes (tests/fuzz/crashes/<target>); new inputs go
# to BUILD_DIR/fuzz/<target>/corpus, never into the tree. A crash stops that target and leaves
# its input in BUILD_DIR/fuzz/<target>/; once fixed, copy it into tests/fuzz/crashes/<target>/ so
# that every later run replays it. Prints executions per target; exits 1 if any target crashed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]}"
seconds="${2:-300}"
shift $(($# >= 2 ? 2 : 1))
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(tfrecord example example_json wordpiece vocab_files idx hdf5)
fi

cmake --build "$build" -j2 --target "${targets[@]/%/_fuzzer}"

# Loading damaged files logs warnings (skipped layers): one per input would slow the fuzzing.
export KESTREL_LOG_LEVEL="${KESTREL_LOG_LEVEL:-off}"
failed=()
for target in "${targets[@]}"; do
  work="$build/fuzz/$target"
  mkdir -p "$work/corpus"
  inputs=("$here/corpus/$target")
  [[ -d "$here/crashes/$target" ]] && inputs+=("$here/crashes/$target")
  log="$work/fuzz.log"
  # -timeout: an input running 10 s is a hang; -rss_limit_mb: an input that needs 2 GB is a finding.
  if "$build/tests/fuzz/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "${inputs[@]}" >"$log" 2>&1; then
    runs=$(grep -o '^stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $target: $runs executions in ${seconds} s, no crash"
  else
    echo "fuzz: $target: FAILED; the input is in $work/, the report follows" >&2
    grep -v '^#' "$log" | tail -60 >&2
    failed+=("$target")
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: crashed: ${failed[*]}" >&2
  exit 1
fi
