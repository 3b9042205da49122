// Lets GoogleTest print a Shape in failure messages ("[2, 3]" rather than its bytes).
//
//   EXPECT_EQ(t.shape(), Shape({2, 3}));   // on failure: Expected equality ... Which is: [2, 4]
#pragma once

#include <ostream>

#include "framework/core/shape.h"

namespace kestrel {

// Found by argument-dependent lookup, so it lives in Shape's namespace.
inline void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.to_string(); }

}  // namespace kestrel
