# Finds libzip (Debian: libzip-dev) as libzip::zip, the name of libzip's own CMake package. That
# package cannot be used on Debian: its targets file also checks for the zipcmp, zipmerge and
# ziptool programs, which libzip-dev does not install, and fails when they are missing.
find_path(Libzip_INCLUDE_DIR zip.h)
find_library(Libzip_LIBRARY NAMES zip)
if(Libzip_INCLUDE_DIR AND EXISTS "${Libzip_INCLUDE_DIR}/zipconf.h")
  file(STRINGS "${Libzip_INCLUDE_DIR}/zipconf.h" _libzip_version_line REGEX "^#define LIBZIP_VERSION \"[^\"]*\"")
  string(REGEX REPLACE "^#define LIBZIP_VERSION \"([^\"]*)\".*" "\\1" Libzip_VERSION "${_libzip_version_line}")
  unset(_libzip_version_line)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Libzip REQUIRED_VARS Libzip_LIBRARY Libzip_INCLUDE_DIR VERSION_VAR Libzip_VERSION)
if(Libzip_FOUND AND NOT TARGET libzip::zip)
  add_library(libzip::zip UNKNOWN IMPORTED)
  set_target_properties(libzip::zip PROPERTIES IMPORTED_LOCATION "${Libzip_LIBRARY}"
                                               INTERFACE_INCLUDE_DIRECTORIES "${Libzip_INCLUDE_DIR}")
endif()
mark_as_advanced(Libzip_INCLUDE_DIR Libzip_LIBRARY)
