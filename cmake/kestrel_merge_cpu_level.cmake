# cmake -DLEVEL=avx2 -DOUTPUT=out.o -DOBJECTS="a.o|b.o" -DLINKER=ld -DNM=nm -DOBJCOPY=objcopy -P this
#
# Links one CPU level's kernel objects into OUTPUT and renames every weak definition in it
# (inline functions, template instantiations, their COMDAT groups) to "kestrel.<LEVEL>.<name>", so
# the final link cannot swap them with another level's or the baseline library's copies.
# See KestrelCpuKernels.cmake.
string(REPLACE "|" ";" objects "${OBJECTS}")
set(partial "${OUTPUT}.partial")
execute_process(COMMAND "${LINKER}" -r -o "${partial}" ${objects} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${NM}" --defined-only --extern-only --format=posix "${partial}"
                OUTPUT_VARIABLE symbols COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" lines "${symbols}")
set(renames "")
foreach(line IN LISTS lines)
  # posix format: "<name> <type> <value> [<size>]"; W/V weak, u GNU unique (inline statics).
  if(line MATCHES "^([^ ]+) [WVu] ")
    string(APPEND renames "${CMAKE_MATCH_1} kestrel.${LEVEL}.${CMAKE_MATCH_1}\n")
  endif()
endforeach()
file(WRITE "${OUTPUT}.renames" "${renames}")
execute_process(COMMAND "${OBJCOPY}" --redefine-syms "${OUTPUT}.renames" "${partial}" "${OUTPUT}"
                COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE "${partial}")
