// The headers most test files include, precompiled once for every test executable
// (tests/CMakeLists.txt, KESTREL_PRECOMPILE_HEADERS): GoogleTest, the standard library, and the
// framework's core.
// Each test file still includes what it uses; this list only decides what is parsed once.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
