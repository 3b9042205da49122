// Python's float repr and str.format with named fields, so checkpoint paths and CSV logs read as
// Keras writes them (internal to the callbacks).
//
//   detail::python_float_repr(100.0);                                   // "100.0"
//   detail::python_format("{epoch:02d}-{val_loss:.4f}.weights.h5",
//                         {{"epoch", std::int64_t{3}}, {"val_loss", 0.25}});   // "03-0.2500.weights.h5"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

namespace kestrel::callbacks::detail {

/// Python's repr(float): shortest round-trip digits, fixed for exponents in [-4, 16) with at
/// least one decimal ("100.0"), scientific otherwise ("1e-05", "1e+16"), "nan", "inf", "-inf".
std::string python_float_repr(double value);

/// A field value: an integer (epoch, batch) or a float (a log value).
using FormatValue = std::variant<std::int64_t, double>;

/// Python's str.format with named fields: "{name}", "{name:spec}" (fill, align, sign, width,
/// precision, and types d x X o b e E f F g G %), "{{" and "}}". Unknown names, bad specs, and
/// integer types on floats throw ValueError naming the pattern, as Python's KeyError/ValueError do.
std::string python_format(std::string_view pattern, const std::map<std::string, FormatValue>& values);

}  // namespace kestrel::callbacks::detail
