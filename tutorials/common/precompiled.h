// The headers every tutorial and benchmark program includes, precompiled once for all of them
// (cmake/KestrelPrecompiledHeaders.cmake): Kestrel's umbrella header, CLI11 and nlohmann/json.
// Each program still includes what it uses; this list only decides what is parsed once.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kestrel.h"
