#!/usr/bin/env bash
# Fuzzes Kestrel's readers of outside data with libFuzzer, one target after another.
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]
#   tests/fuzz/run_fuzzers.sh build-asan 600               # ten minutes each, every target
#   tests/fuzz/run_fuzzers.sh build-asan 30 idx tfrecord   # what CI does, for two targets
#
# BUILD_DIR is a clang build configured with -DKESTREL_BUILD_FUZZERS=ON and the sanitizers (see
# .ci/run); the targets are built here if needed. Each target starts from its seed corpus
# (tests/fuzz/corpus/<target>) and its known crashes (tests/fuzz/crashes/<target>), and mutates
# with its dictionary (tests/fuzz/dictionaries/<target>.dict: the tokens, keys, tags and magic
# numbers its format is made of); new inputs go to BUILD_DIR/fuzz/<target>/corpus, never into
# the tree. A crash stops that target and leaves
# its input in BUILD_DIR/fuzz/<target>/; once fixed, copy it into tests/fuzz/crashes/<target>/ so
# that every later run replays it. Prints executions per target; exits 1 if any target crashed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]}"
seconds="${2:-300}"
shift $(($# >= 2 ? 2 : 1))
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(tfrecord example example_json wordpiece vocab_files idx hdf5 zip)
fi

cmake --build "$build" -j2 --target "${targets[@]/%/_fuzzer}"

# Where the report of replaying an input starts, past the sanitizers, libFuzzer and the
# allocator: "libhdf5", "kestrel" (anywhere else), or "none" when the replay reports nothing.
failure_site() {
  local frame
  local plumbing=' in (malloc|calloc|realloc|free|__interceptor_|__sanitizer|__asan|fuzzer::|operator new|H5MM_|H5FL_)'
  frame=$(ASAN_OPTIONS=fast_unwind_on_malloc=0 "$1" "$2" 2>&1 | grep -E '^ +#[0-9]+ ' | grep -vE "$plumbing" |
    head -1 || true)
  if [[ -z "$frame" ]]; then
    echo none
  elif [[ "$frame" == *libhdf5* ]]; then
    echo libhdf5
  else
    echo kestrel
  fi
}

# libhdf5 1.10 crashes, leaks or allocates what the damage claims on some damaged files, in code
# Kestrel cannot check ahead (framework/saving/hdf5_checks.h). So HDF5 is fuzzed in fork mode,
# past those, and every input that failed is replayed: one whose report starts inside libhdf5 is
# counted, any other is Kestrel's and fails the run. (A bad buffer that Kestrel hands libhdf5
# would also fail inside libhdf5: read the counted reports now and then.)
fuzz_past_libhdf5() {
  local fuzzer="$1" work="$2" log="$3"
  shift 3
  "$fuzzer" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$work/" "$work/corpus" "$@" >"$log" 2>&1 || true  # non-zero after any failure
  local libhdf5=0 none=0 input
  for input in "$work"/crash-* "$work"/leak-* "$work"/oom-* "$work"/timeout-*; do
    [[ -e "$input" ]] || continue
    case "$(failure_site "$fuzzer" "$input")" in
      libhdf5) libhdf5=$((libhdf5 + 1)) ;;
      none) none=$((none + 1)) ;;
      *)
        echo "fuzz: $input fails in Kestrel's code" >&2
        return 1
        ;;
    esac
  done
  echo "fuzz: hdf5: $(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#') executions in ${seconds} s;" \
       "$libhdf5 failing inputs fail inside libhdf5, $none do not fail again; all left in $work/"
}

# Loading damaged files logs warnings (skipped layers): one per input would slow the fuzzing.
export KESTREL_LOG_LEVEL="${KESTREL_LOG_LEVEL:-off}"
failed=()
for target in "${targets[@]}"; do
  work="$build/fuzz/$target"
  mkdir -p "$work/corpus"
  inputs=("$here/corpus/$target")
  [[ -d "$here/crashes/$target" ]] && inputs+=("$here/crashes/$target")
  log="$work/fuzz.log"
  fuzzer="$build/tests/fuzz/${target}_fuzzer"
  options=()
  [[ -f "$here/dictionaries/$target.dict" ]] && options+=("-dict=$here/dictionaries/$target.dict")
  if [[ "$target" == hdf5 ]]; then
    fuzz_past_libhdf5 "$fuzzer" "$work" "$log" "${options[@]}" "${inputs[@]}" || failed+=("$target")
    continue
  fi
  # -timeout: an input running 10 s is a hang; -rss_limit_mb: an input that needs 2 GB is a finding.
  if "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${options[@]}" \
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
