// The standard headers and core headers most of the library's files include, precompiled once for
// kestrel::framework (framework/CMakeLists.txt, KESTREL_PRECOMPILE_HEADERS). Only core and the
// standard library: a header from a higher layer here would be visible to every layer below it.
// Each file still includes what it uses; this list only decides what is parsed once. Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/tensor.h"
