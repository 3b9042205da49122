# Every dependency comes from a Debian package (bash .ci/setup installs them) through find_package.
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(spdlog REQUIRED)
find_package(ZLIB REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Protobuf REQUIRED)
# Matmul and convolution run on oneDNN (libdnnl-dev), which picks its kernels per CPU at run time.
# Debian builds it on OpenMP: Kestrel calls libgomp's omp_set_num_threads so that oneDNN never
# starts threads of its own (framework/ops/kernels/onednn.cpp), and links libgomp for that.
find_package(dnnl REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
set(KESTREL_OPENMP_LIBRARIES ${OpenMP_CXX_LIBRARIES})
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # Another compiler's OpenMP (clang's libomp) would be a second runtime beside oneDNN's libgomp,
  # and Kestrel's omp_set_num_threads would reach that one instead: link libgomp itself.
  find_library(KESTREL_GOMP_LIBRARY NAMES gomp libgomp.so.1 REQUIRED)
  set(KESTREL_OPENMP_LIBRARIES ${KESTREL_GOMP_LIBRARY})
endif()
# kestrel::datasets: Unicode (BERT normalization) and JSON (tokenizer.json, Example dumps).
find_package(Utf8proc REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
# Keras 3's .keras model archives are zip files, written and read through libzip (libzip-dev,
# framework/io/zip_archive.h); cmake/FindLibzip.cmake says why its own CMake package is not used.
find_package(Libzip 1.7 REQUIRED)
if(KESTREL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
# The benchmarks, tutorials and tools parse flags with CLI11, behind programs/command_line.h.
find_package(CLI11 REQUIRED)
# kestrel::strategies: workers of a multi-worker job talk over OpenMPI (libopenmpi-dev), through its C API.
find_package(MPI REQUIRED COMPONENTS C)
