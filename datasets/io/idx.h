// IDX files (the MNIST family's format), plain or gzip-compressed.
//
//   Tensor images = datasets::read_idx("train-images-idx3-ubyte.gz", DType::float32);  // [60000,28,28]
//   Tensor labels = datasets::read_idx("train-labels-idx1-ubyte.gz", DType::int64);    // [60000]
//
// Layout: two zero bytes, a type code (0x08 ubyte, 0x09 byte, 0x0B short, 0x0C int, 0x0D float,
// 0x0E double), the rank, then each dim and the data, all big-endian.
#pragma once

#include <string>

#include "framework/core/tensor.h"

namespace kestrel::datasets {

/// Reads an IDX file (gzip detected from its content) and converts the values to dtype.
/// A bad header, an unknown type code or a short file raises IOError naming the file and offset.
Tensor read_idx(const std::string& path, DType dtype);

/// Writes a tensor as an IDX file of unsigned bytes (values must lie in [0, 255]); gzip when
/// the path ends in ".gz". For tests and for exporting data to other tools.
void write_idx_ubyte(const std::string& path, const Tensor& values);

}  // namespace kestrel::datasets
