# cmake -DLEVEL=avx2 -DOUTPUT=out.o -DOBJECTS="a.o|b.o" -DLINKER=ld -DNM=nm -DOBJCOPY=objcopy -P this
#
# Links one CPU level's kernel objects into OUTPUT and renames every weak definition in it
# (inline functions, template instantiations, their COMDAT groups) to "kestrel.<LEVEL>.<name>", so
# the final link cannot swap them with another level's or the baseline library's copies.
# See KestrelCpuKernels.cmake.
#
# A constructor or destructor whose variants are aliases (C1 = C2, D1 = D2) sits in a COMDAT group
# named by a symbol of its own (C5, D5; for a constructor template, C5I...E) that defines nothing,
# which nm lists as type n. Those are renamed too: left as they were, the final link keeps one group
# of each name, drops this level's, and every reference to the level's renamed variants resolves
# to address 0 (a thread_local AlignedBuffer's destructor, called when a thread exits).
string(REPLACE "|" ";" objects "${OBJECTS}")
set(partial "${OUTPUT}.partial")
execute_process(COMMAND "${LINKER}" -r -o "${partial}" ${objects} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${NM}" --defined-only --format=posix "${partial}" OUTPUT_VARIABLE symbols
                COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" lines "${symbols}")
set(renames "")
foreach(line IN LISTS lines)
  # posix format: "<name> <type> <value> [<size>]"; W/V weak, u GNU unique (inline statics), and
  # n for the C++ group signatures (a mangled name; renaming one that is not a signature changes
  # nothing). One MATCHES per if: a second one would reset CMAKE_MATCH_1.
  set(name "")
  if(line MATCHES "^([^ ]+) [WVu] ")
    set(name "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^(_Z[^ ]*) n ")
    set(name "${CMAKE_MATCH_1}")
  endif()
  if(name)
    string(APPEND renames "${name} kestrel.${LEVEL}.${name}\n")
  endif()
endforeach()
file(WRITE "${OUTPUT}.renames" "${renames}")
execute_process(COMMAND "${OBJCOPY}" --redefine-syms "${OUTPUT}.renames" "${partial}" "${OUTPUT}"
                COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE "${partial}")
