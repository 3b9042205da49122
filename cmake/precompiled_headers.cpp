// The one source of each precompiled-header target (cmake/KestrelPrecompiledHeaders.cmake): CMake
// builds a target's precompiled header alongside its sources, so the target needs one.
