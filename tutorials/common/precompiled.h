// The headers every tutorial and benchmark program includes, precompiled once for all of them
// (cmake/KestrelPrecompiledHeaders.cmake): Kestrel's umbrella header and nlohmann/json. Each
// program still includes what it uses; this list only decides what is parsed once. No program
// includes CLI11: programs/command_line.h puts it behind a facade compiled once, since CLI11
// defines objects at namespace scope that every file including it compiles anew (about 10 s at -O3).
#pragma once

#include <nlohmann/json.hpp>

#include "kestrel.h"
