# kestrel_protobuf_generate(TARGET OUT_DIR PROTOS...): protoc's C++ for PROTOS, generated into
# OUT_DIR and compiled into TARGET. Each generated .pb.cc keeps a translation unit of its own in a
# unity build (KESTREL_UNITY_BUILD): protoc gives every file the same internal table names
# (schemas, file_default_instances), which collide when two are compiled as one.
function(kestrel_protobuf_generate target)
  cmake_parse_arguments(ARG "" "OUT_DIR" "PROTOS" ${ARGN})
  protobuf_generate(TARGET ${target} LANGUAGE cpp PROTOS ${ARG_PROTOS} PROTOC_OUT_DIR "${ARG_OUT_DIR}"
                    OUT_VAR generated)
  set_source_files_properties(${generated} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
