#!/usr/bin/env bash
# check_no_wide_slp.sh: fail if GCC produced either of two things we do not accept in Kestrel's
# AVX-512 code. It reads GCC's dumps, either of objects the build already compiled with the dump
# flags below, or of sources it compiles itself (-S, nothing runs). Either way it works on any
# x86-64 machine, with or without AVX-512.
#
#   1. "basic block part vectorized using 64 byte vectors": 512-bit SLP. Kestrel's avx512 flags
#      (KESTREL_AVX512_FLAGS in cmake/KestrelCompileOptions.cmake) include
#      -mprefer-vector-width=256, which keeps GCC's vectorizer at 256 bits; this catches a
#      target that lost that flag. It is not itself a miscompile. Read from the vectorizers'
#      dumps (-fdump-tree-vect-optimized -fdump-tree-slp-optimized).
#   2. The GCC 12.2 wide-constant broadcast miscompile, the real cause of the Pad and
#      CausalLmBatch failures on AVX-512 machines (tests/framework/core/
#      avx512_slp_regression_test.cpp). GCC copies 32 or 64 bytes, e.g. the initializer list of
#      std::vector<std::int64_t>{1, 1, 1, 0}, as one 256- or 512-bit integer; it stores such a
#      constant without its top 64-bit words when they only repeat the sign of the word below,
#      and the x86 backend (ix86_convert_const_wide_int_to_broadcast) compares only the stored
#      words: {1, 1, 1, 0} looks like "all 1" and is emitted as vpbroadcastq 1, i.e. {1, 1, 1, 1}.
#      -mprefer-vector-width=256 does not avoid it (a 32-byte copy is still one integer move);
#      -mmove-max=128 -mstore-max=128 does. The check reads GCC's RTL expand dump
#      (-fdump-rtl-expand): a broadcast that GCC built for a 32- or 64-byte integer records the
#      constant it stands for (a REG_EQUAL note), and one whose constant is not a single value
#      repeated is reported, with the function it is in. A broadcast with no such record cannot be verified and is
#      reported too.
#
# Usage (from the source tree):
#   cmake/check_no_wide_slp.sh --objects OBJECT...
#   cmake/check_no_wide_slp.sh [COMPILER FLAGS...] SOURCE...
#
#   With --objects, each OBJECT (dir/name.o) must have been compiled by GCC with the three dump
#   flags above, which leave dir/name.*.vect, .slp1, .slp2 and .expand beside it; the avx512
#   kernels are built that way (cmake/KestrelCpuKernels.cmake), so checking them compiles nothing.
#
#   Otherwise the sources are compiled here, with those dump flags:
#   Arguments naming an existing .c/.cc/.cpp/.cxx file are sources; all others go to the
#   compiler after the default flags, so later ones win. Give include paths joined (-I/path, not
#   -I /path). The default flags are
#     -O3 -march=x86-64-v4 -mprefer-vector-width=256
#   KESTREL_CHECK_FLAGS="..." replaces them; the compiler is $CXX, else g++ ($CC, else gcc, for
#   .c files); C++ sources get -std=c++20 unless a -std is given.
#
#   Exit status: 0 when everything is clean, 1 when anything is reported, 2 on a usage or
#   compile error or a missing dump.
#
# Examples:
#   # The avx512 kernels as the build compiled them:
#   cmake/check_no_wide_slp.sh --objects build/framework/CMakeFiles/kestrel_framework_cpu_avx512.dir/ops/kernels/cpu/*.o
#   # The avx512 kernel sources with Kestrel's avx512 flags (the defaults plus the two below):
#   cmake/check_no_wide_slp.sh -mmove-max=128 -mstore-max=128 -I. -Ibuild/generated/framework \
#       -Ibuild/generated SOURCE...
#   # The reproducer with the flags of the failing build: reports both findings, exits 1.
#   KESTREL_CHECK_FLAGS="-O3 -march=x86-64-v4" cmake/check_no_wide_slp.sh -I. \
#       tests/framework/core/avx512_slp_regression_helper.cpp
#   # With only -mprefer-vector-width=256 (the defaults): no 512-bit SLP, still the miscompile.
#   cmake/check_no_wide_slp.sh -I. tests/framework/core/avx512_slp_regression_helper.cpp
set -u

dump_flags=(-fdump-tree-vect-optimized -fdump-tree-slp-optimized -fdump-rtl-expand)

objects=()
sources=()
extra=()
if [[ "${1:-}" == "--objects" ]]; then
  shift
  objects=("$@")
else
  for arg in "$@"; do
    case "$arg" in
      *.c | *.cc | *.cpp | *.cxx)
        if [[ -f "$arg" ]]; then sources+=("$arg"); else extra+=("$arg"); fi ;;
      *) extra+=("$arg") ;;
    esac
  done
fi
if [[ ${#sources[@]} -eq 0 && ${#objects[@]} -eq 0 ]]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  echo "check_no_wide_slp: no source or object files given" >&2
  exit 2
fi

status=0

# check_dumps NAME PREFIX: reads the dumps GCC wrote as PREFIX.*, for the unit called NAME in
# the report, and raises status on a finding (1) or on missing dumps (2).
check_dumps() {
  local src="$1" prefix="$2" expand vectorizer_dumps
  expand="$(ls "$prefix".*r.expand 2> /dev/null | head -n 1)"
  mapfile -t vectorizer_dumps < <(ls "$prefix".*t.vect "$prefix".*t.slp[0-9] 2> /dev/null)
  if [[ -z "$expand" || ${#vectorizer_dumps[@]} -eq 0 ]]; then
    echo "check_no_wide_slp: $src: GCC wrote no expand or vectorizer dump at $prefix.*" \
         "(compiled without ${dump_flags[*]}?)" >&2
    status=2
    return
  fi

  # 1. 512-bit SLP.
  if grep -q "64 byte vectors" "${vectorizer_dumps[@]}"; then
    echo "$src: GCC vectorized with 64-byte (512-bit) vectors;" \
         "Kestrel's AVX-512 code is built with -mprefer-vector-width=256:"
    grep -h "64 byte vectors" "${vectorizer_dumps[@]}" | sort | uniq -c | sed 's/^/    /'
    [[ $status -eq 0 ]] && status=1
  fi

  # 2. Broadcasts standing for OImode/XImode constants, from the RTL expand dump.
  if ! awk -v src="$src" '
    function flush(   mode, words, hex, n, i, top, fill, splat, loc, w, words_text) {
      if (insn == "") return
      # A vec_duplicate sets a vector pseudo: remember it.
      if (match(insn, /\(set \(reg:V[0-9A-Z]+ [0-9]+\)[ \t\n]*\(vec_duplicate:/)) {
        split(substr(insn, RSTART, RLENGTH), f, /[ )]/)
        dup[f[3]] = 1
      }
      # A wide integer made from a vector pseudo: lowpart_subreg of the broadcast.
      if (match(insn, /\(subreg:(OI|XI) \(reg:V[0-9A-Z]+ [0-9]+\) 0\)/)) {
        s = substr(insn, RSTART, RLENGTH)
        mode = substr(s, 9, 2)
        split(s, f, /[ )]/)
        if (f[3] in dup) {
          words = (mode == "OI") ? 4 : 8
          loc = ""
          if (match(insn, /"[^"]*":[0-9]+(:[0-9]+)?/)) loc = substr(insn, RSTART, RLENGTH)
          if (match(insn, /REG_EQUAL \(const_wide_int 0x[0-9a-f]+\)/)) {
            hex = substr(insn, RSTART + 28, RLENGTH - 29)
            n = int((length(hex) + 15) / 16)
            while (length(hex) < n * 16) hex = "0" hex
            top = substr(hex, 1, 1)
            fill = (index("89abcdef", top) > 0) ? "ffffffffffffffff" : "0000000000000000"
            for (i = n; i < words; i++) hex = fill hex
            splat = 1
            for (i = 1; i < words; i++)
              if (substr(hex, 1 + i * 16, 16) != substr(hex, 1, 16)) splat = 0
            if (!splat) {
              words_text = ""
              for (i = words - 1; i >= 0; i--) {
                w = substr(hex, 1 + i * 16, 16)
                sub(/^0+/, "", w)
                words_text = words_text (i < words - 1 ? ", " : "") "0x" (w == "" ? "0" : w)
              }
              w = substr(hex, 1 + (words - 1) * 16, 16)
              sub(/^0+/, "", w)
              printf "%s: in %s (%s):\n", src, fn, loc
              printf "    the %d-byte constant {%s} (64-bit words, element 0 first) is built as\n",
                words * 8, words_text
              printf "    a broadcast of its first word, so it reads back as 0x%s in every word\n", (w == "" ? "0" : w)
              printf "    (GCC 12 wide-constant broadcast bug; -mmove-max=128 -mstore-max=128 avoid it)\n"
              bad++
            }
          } else {
            printf "%s: in %s (%s):\n", src, fn, loc
            printf "    GCC broadcasts a scalar into a %d-byte integer and records no constant for it;\n", words * 8
            printf "    this check cannot tell whether it is right (-mmove-max=128 -mstore-max=128 avoid it)\n"
            bad++
          }
        }
      }
      insn = ""
    }
    /^;; Function / {
      flush(); split("", dup); fn = substr($0, 13)
      if (match($0, /\([^ (,]+, funcdef_no/)) fn = substr($0, 13, RSTART - 14)
      next
    }
    /^\((insn|jump_insn|call_insn|note|code_label|barrier|debug_insn)[ \/]/ { flush(); insn = $0; next }
    /^[ \t]/ { if (insn != "") insn = insn "\n" $0; next }
    { flush() }
    END { flush(); exit bad > 0 }
  ' "$expand"; then
    [[ $status -eq 0 ]] && status=1
  fi
}

for object in "${objects[@]}"; do
  check_dumps "$object" "${object%.o}"
done

if [[ ${#sources[@]} -gt 0 ]]; then
  flags_default="-O3 -march=x86-64-v4 -mprefer-vector-width=256"
  read -r -a base_flags <<< "${KESTREL_CHECK_FLAGS:-$flags_default}"
  compiler="${CXX:-g++}"
  std=()
  case " ${base_flags[*]} ${extra[*]} " in
    *" -std="*) ;;
    *) std=(-std=c++20) ;;
  esac
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
index=0
for src in "${sources[@]}"; do
  index=$((index + 1))
  cc="$compiler"
  lang=("${std[@]}")
  if [[ "$src" == *.c ]]; then cc="${CC:-gcc}"; lang=(); fi
  if ! "$cc" "${lang[@]}" "${base_flags[@]}" "${extra[@]}" -S -o /dev/null "${dump_flags[@]}" \
        -dumpdir "$work/" -dumpbase "s$index" "$src" 2> "$work/s$index.err"; then
    echo "check_no_wide_slp: $src: compile failed:" >&2
    cat "$work/s$index.err" >&2
    status=2
    continue
  fi
  check_dumps "$src" "$work/s$index"
done
exit $status
