// The headers every tutorial and benchmark program includes, precompiled once for all of them
// (cmake/KestrelPrecompiledHeaders.cmake): Kestrel's umbrella header and nlohmann/json. Each
// program still includes what it uses; this list only decides what is parsed once. CLI11 is left
// out: it defines objects at namespace scope, so a precompiled copy would make every file compile
// them (about 5 s each at -O3), where only the files that parse flags need them.
#pragma once

#include <nlohmann/json.hpp>

#include "kestrel.h"
