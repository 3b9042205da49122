// Helpers for the callback tests: a one-weight model compiled with SGD, a scratch directory, and a reader for
// TFRecord framing written independently of the library.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/model/model.h"
#include "framework/ops/elementwise.h"
#include "framework/optimizers/sgd.h"

namespace kestrel::testing {

/// A model with one weight "w" of shape [2], built at construction.
class TinyModel : public Model {
 public:
  TinyModel() : Model("tiny_model") {
    w_ = add_weight("w", {2}, "zeros");
    mark_built();
  }
  Tensor call(const Inputs& x, bool training) override { return ops::multiply(x.tensor(), w_.value()); }
  /// Sets w to {value, value}.
  void set_w(float value) { w_.assign(Tensor::from_vector<float>({value, value}, {2})); }
  float w() const { return w_.value().to_vector<float>()[0]; }

 private:
  Variable w_;
};

/// Compiles `model` with plain SGD at learning rate `lr`.
inline void compile_sgd(Model& model, double lr) {
  CompileOptions options;
  options.optimizer = optimizers::SGD({.learning_rate = lr});
  model.compile(options);
}

/// A fresh directory under the system temp dir, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("kestrel_cb_" + std::string(info->test_suite_name()) + "_" +
                                                      info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Bitwise CRC-32C, the definition itself: a reference for the table-driven one.
inline std::uint32_t reference_crc32c(const std::string& data) {
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::uint32_t reference_masked(const std::string& data) {
  const std::uint32_t crc = reference_crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

inline std::uint64_t read_le(const std::string& bytes, std::size_t at, int count) {
  std::uint64_t v = 0;
  for (int i = 0; i < count; ++i) v |= std::uint64_t{static_cast<unsigned char>(bytes.at(at + i))} << (8 * i);
  return v;
}

/// Splits a TFRecord stream into its records, checking both CRCs of each with the reference CRC.
inline std::vector<std::string> parse_records(const std::string& stream) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < stream.size()) {
    EXPECT_GE(stream.size() - at, 16u) << "truncated record at " << at;
    if (stream.size() - at < 16) break;
    const std::uint64_t length = read_le(stream, at, 8);
    EXPECT_EQ(read_le(stream, at + 8, 4), reference_masked(stream.substr(at, 8))) << "length crc at " << at;
    std::string data = stream.substr(at + 12, length);
    EXPECT_EQ(read_le(stream, at + 12 + length, 4), reference_masked(data)) << "data crc at " << at;
    out.push_back(std::move(data));
    at += 16 + length;
  }
  return out;
}

}  // namespace kestrel::testing
