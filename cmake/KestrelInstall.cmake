# cmake --install: headers under include/kestrel (the include root), the libraries, and a
# package config so downstream projects can find_package(Kestrel) and link kestrel::framework.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(FILES "${PROJECT_SOURCE_DIR}/kestrel.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kestrel)
foreach(dir framework strategies datasets models)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${dir}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kestrel/${dir}
          FILES_MATCHING PATTERN "*.h"
          PATTERN "precompiled.h" EXCLUDE)  # the build's precompiled-header list, not an API
endforeach()

install(EXPORT KestrelTargets NAMESPACE kestrel:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kestrel)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/KestrelConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/KestrelConfig.cmake" INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kestrel)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/KestrelConfigVersion.cmake" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/KestrelConfig.cmake" "${PROJECT_BINARY_DIR}/KestrelConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindUtf8proc.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindLibzip.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kestrel)
