// Tensor construction, typed access, sharing and printing.
#include "framework/core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <ostream>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "tests/support/shape_printer.h"

namespace kestrel {

namespace {

std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Tensor, DefaultConstructedIsUndefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_FALSE(t.requires_grad());
  EXPECT_EQ(t.grad_record(), nullptr);
  EXPECT_EQ(t.to_string(), "Tensor(undefined)");
}

TEST(Tensor, FromVectorRoundTripsFloat32) {
  std::vector<float> values{1.5f, -2.25f, 0.0f, 3e20f, -1e-30f, 7.0f};
  Tensor t = Tensor::from_vector(values, {2, 3});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.dtype(), DType::float32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.to_vector<float>(), values);
}

TEST(Tensor, FromVectorRoundTripsBFloat16) {
  std::vector<bfloat16> values{bfloat16(1.0f), bfloat16(-0.5f), bfloat16(3.140625f), bfloat16::from_bits(0x7f80u)};
  Tensor t = Tensor::from_vector(values, {4});
  EXPECT_EQ(t.dtype(), DType::bfloat16);
  EXPECT_EQ(t.nbytes(), 8u);
  std::vector<bfloat16> back = t.to_vector<bfloat16>();
  ASSERT_EQ(back.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back[i].bits, values[i].bits) << i;
  std::vector<float> as_float = t.to_vector<float>();
  EXPECT_EQ(as_float[2], 3.140625f);
  EXPECT_TRUE(std::isinf(as_float[3]));
}

TEST(Tensor, FromVectorRoundTripsInt32) {
  std::vector<std::int32_t> values{0, -1, std::numeric_limits<std::int32_t>::max(),
                                   std::numeric_limits<std::int32_t>::min()};
  Tensor t = Tensor::from_vector(values, {2, 2});
  EXPECT_EQ(t.dtype(), DType::int32);
  EXPECT_EQ(t.to_vector<std::int32_t>(), values);
}

TEST(Tensor, FromVectorRoundTripsInt64) {
  std::vector<std::int64_t> values{(std::int64_t{1} << 53) + 1, -5, std::numeric_limits<std::int64_t>::max()};
  Tensor t = Tensor::from_vector(values, {3});
  EXPECT_EQ(t.dtype(), DType::int64);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.to_vector<std::int64_t>(), values);
}

TEST(Tensor, FromVectorRoundTripsBool) {
  std::vector<bool> values{true, false, false, true, true};
  Tensor t = Tensor::from_vector(values, {5});
  EXPECT_EQ(t.dtype(), DType::bool_);
  EXPECT_EQ(t.nbytes(), 5u);
  EXPECT_EQ(t.to_vector<bool>(), values);
  EXPECT_EQ(t.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 0, 0, 1, 1}));
}

TEST(Tensor, FromVectorIntoAScalarShape) {
  Tensor t = Tensor::from_vector<float>({4.5f}, {});
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.item(), 4.5);
}

TEST(Tensor, FromVectorWithTheWrongCountIsAShapeError) {
  EXPECT_THROW(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(Tensor::from_vector<std::int64_t>({}, {1}), ShapeError);
  std::string what = message_of([] { Tensor::from_vector<float>({1, 2, 3, 4, 5}, {2, 3}); });
  EXPECT_NE(what.find("5 values"), std::string::npos) << what;
  EXPECT_NE(what.find("[2,3]"), std::string::npos) << what;
  EXPECT_NE(what.find("6 elements"), std::string::npos) << what;
}

TEST(Tensor, ToVectorConvertsBetweenDTypes) {
  Tensor f = Tensor::from_vector<float>({1.75f, -2.5f, 0.0f}, {3});
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{1.75, -2.5, 0.0}));
  EXPECT_EQ(f.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, -2, 0}));
  EXPECT_EQ(f.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  std::vector<bfloat16> h = f.to_vector<bfloat16>();
  EXPECT_EQ(static_cast<float>(h[0]), 1.75f);
  Tensor i = Tensor::from_vector<std::int64_t>({3, -4}, {2});
  EXPECT_EQ(i.to_vector<float>(), (std::vector<float>{3.0f, -4.0f}));
}

TEST(Tensor, DataWithTheMatchingTypeGivesTheElements) {
  Tensor t = Tensor::from_vector<std::int32_t>({7, 8, 9}, {3});
  const std::int32_t* p = t.data<std::int32_t>();
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[2], 9);
  EXPECT_EQ(static_cast<const void*>(p), t.raw_data());
  EXPECT_EQ(t.view().data, t.raw_data());
  EXPECT_EQ(t.view().shape, t.shape());
  EXPECT_EQ(t.view().dtype, DType::int32);
  EXPECT_EQ(t.view().numel(), 3);
}

TEST(Tensor, DataWithTheWrongTypeIsATypeErrorNamingBothDTypes) {
  Tensor t = Tensor::from_vector<float>({1, 2}, {2});
  EXPECT_THROW(t.data<std::int32_t>(), TypeError);
  EXPECT_THROW(t.data<bfloat16>(), TypeError);
  EXPECT_THROW(t.data<bool>(), TypeError);
  std::string what = message_of([&] { t.data<std::int64_t>(); });
  EXPECT_NE(what.find("float32[2]"), std::string::npos) << what;
  EXPECT_NE(what.find("int64"), std::string::npos) << what;
}

TEST(Tensor, ItemReadsAOneElementTensor) {
  EXPECT_EQ(Tensor::scalar(2.5).item(), 2.5);
  EXPECT_EQ(Tensor::from_vector<std::int64_t>({-9}, {1, 1}).item(), -9.0);
  EXPECT_EQ(Tensor::from_vector<bool>({true}, {1}).item(), 1.0);
}

TEST(Tensor, ItemOnAManyElementTensorIsAShapeError) {
  Tensor t = Tensor::zeros({2, 3});
  EXPECT_THROW(t.item(), ShapeError);
  EXPECT_THROW(Tensor::zeros({0}).item(), ShapeError);
  std::string what = message_of([&] { t.item(); });
  EXPECT_NE(what.find("float32[2,3]"), std::string::npos) << what;
}

TEST(Tensor, ZerosOnesAndFullForEveryDType) {
  for (DType d : {DType::float32, DType::bfloat16, DType::int32, DType::int64, DType::bool_}) {
    SCOPED_TRACE(std::string(to_string(d)));
    Tensor z = Tensor::zeros({2, 3}, d);
    Tensor o = Tensor::ones({4}, d);
    EXPECT_EQ(z.dtype(), d);
    EXPECT_EQ(z.shape(), (Shape{2, 3}));
    EXPECT_EQ(z.to_vector<double>(), std::vector<double>(6, 0.0));
    EXPECT_EQ(o.to_vector<double>(), std::vector<double>(4, 1.0));
  }
  EXPECT_EQ(Tensor::full({3}, 2.5).to_vector<float>(), (std::vector<float>{2.5f, 2.5f, 2.5f}));
  EXPECT_EQ(Tensor::full({2}, -7, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-7, -7}));
  EXPECT_EQ(Tensor::full({1}, 3.14159, DType::bfloat16).to_vector<float>(), (std::vector<float>{3.140625f}));
  EXPECT_EQ(Tensor::full({2}, 0.5, DType::bool_).to_vector<bool>(), (std::vector<bool>{true, true}));
}

TEST(Tensor, FullTruncatesTowardZeroForIntegers) {
  EXPECT_EQ(Tensor::full({1}, 2.9, DType::int32).item(), 2.0);
  EXPECT_EQ(Tensor::full({1}, -2.9, DType::int64).item(), -2.0);
}

TEST(Tensor, FullKeepsLargeInt64ValuesExact) {
  // 2^40 + 1 needs more mantissa bits than a float has.
  std::int64_t big = (std::int64_t{1} << 40) + 1;
  EXPECT_EQ(Tensor::full({1}, static_cast<double>(big), DType::int64).to_vector<std::int64_t>()[0], big);
  EXPECT_EQ(Tensor::full({1}, 2147483647.0, DType::int32).to_vector<std::int32_t>()[0], 2147483647);
  EXPECT_EQ(Tensor::full({1}, -2147483648.0, DType::int32).to_vector<std::int32_t>()[0], -2147483647 - 1);
}

TEST(Tensor, FullRejectsValuesAnIntegerDTypeCannotHold) {
  EXPECT_THROW(Tensor::full({2}, 1e20, DType::int32), ValueError);
  EXPECT_THROW(Tensor::full({2}, 2147483648.0, DType::int32), ValueError);
  EXPECT_THROW(Tensor::full({2}, 1e19, DType::int64), ValueError);
  EXPECT_THROW(Tensor::full({2}, std::nan(""), DType::int64), ValueError);
  EXPECT_THROW(Tensor::scalar(std::numeric_limits<double>::infinity(), DType::int32), ValueError);
  std::string what = message_of([] { Tensor::full({1}, 1e10, DType::int32); });
  EXPECT_NE(what.find("int32"), std::string::npos) << what;
  // Floating dtypes follow float arithmetic instead: too large becomes infinity.
  EXPECT_TRUE(std::isinf(Tensor::full({1}, 1e300).to_vector<float>()[0]));
}

TEST(Tensor, ScalarHasRankZero) {
  Tensor s = Tensor::scalar(3, DType::int64);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.nbytes(), 8u);
  EXPECT_EQ(s.item(), 3.0);
}

TEST(Tensor, EmptyAllocatesWithoutFilling) {
  std::int64_t before = allocator_stats().allocations;
  Tensor t = Tensor::empty({16, 16}, DType::int64);
  EXPECT_EQ(allocator_stats().allocations, before + 1);
  EXPECT_EQ(t.buffer()->size(), 16u * 16u * 8u);
  EXPECT_EQ(t.nbytes(), t.buffer()->size());
}

TEST(Tensor, ZeroElementTensorsWork) {
  Tensor t = Tensor::zeros({0, 4});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
  EXPECT_TRUE(t.to_vector<float>().empty());
}

TEST(Tensor, CopiesShareTheSameTensor) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3});
  std::int64_t before = allocator_stats().allocations;
  Tensor b = a;
  EXPECT_EQ(allocator_stats().allocations, before);
  EXPECT_TRUE(b.is_same(a));
  EXPECT_EQ(b.id(), a.id());
  EXPECT_EQ(b.buffer(), a.buffer());
  EXPECT_EQ(b.raw_data(), a.raw_data());
  // Marking one handle marks the tensor, so every handle sees it.
  a.set_requires_grad(true);
  EXPECT_TRUE(b.requires_grad());
}

TEST(Tensor, EqualValuesAreNotTheSameTensor) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor b = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_FALSE(a.is_same(b));
  EXPECT_NE(a.buffer(), b.buffer());
}

TEST(Tensor, FromBufferSharesTheBufferButIsANewTensor) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::int64_t before = allocator_stats().allocations;
  Tensor b = Tensor::from_buffer(a.buffer(), {3, 2}, DType::float32);
  EXPECT_EQ(allocator_stats().allocations, before);
  EXPECT_FALSE(b.is_same(a));
  EXPECT_EQ(b.buffer(), a.buffer());
  EXPECT_EQ(b.shape(), (Shape{3, 2}));
  EXPECT_EQ(b.to_vector<float>(), a.to_vector<float>());
}

TEST(Tensor, FromBufferMayUseAPrefixOfALargerBuffer) {
  auto buf = Buffer::allocate(64);
  Tensor t = Tensor::from_buffer(buf, {4}, DType::int32);
  EXPECT_EQ(t.numel(), 4);
  EXPECT_EQ(t.raw_data(), buf->data());
}

TEST(Tensor, FromBufferTooSmallIsAShapeError) {
  auto buf = Buffer::allocate(15);
  EXPECT_THROW(Tensor::from_buffer(buf, {4}, DType::float32), ShapeError);
  EXPECT_THROW(Tensor::from_buffer(nullptr, {1}, DType::float32), ShapeError);
  std::string what = message_of([&] { Tensor::from_buffer(buf, {2, 2}, DType::int64); });
  EXPECT_NE(what.find("int64[2,2]"), std::string::npos) << what;
  EXPECT_NE(what.find("32 bytes"), std::string::npos) << what;
  EXPECT_NE(what.find("15"), std::string::npos) << what;
}

TEST(Tensor, FromBufferRejectsAShapeWhoseByteCountOverflows) {
  // 2^61 int64 elements are 2^64 bytes: the count must not wrap to 0 and accept any buffer.
  auto buf = Buffer::allocate(64);
  EXPECT_THROW(Tensor::from_buffer(buf, {std::int64_t{1} << 61}, DType::int64), ShapeError);
  std::string what = message_of([&] { Tensor::from_buffer(buf, {std::int64_t{1} << 61}, DType::int64); });
  EXPECT_NE(what.find("more than 2^64 bytes"), std::string::npos) << what;
}

TEST(Tensor, EmptyRejectsAShapeWhoseByteCountOverflows) {
  EXPECT_THROW(Tensor::empty({std::int64_t{1} << 61}, DType::int64), std::bad_alloc);
  EXPECT_THROW(Tensor::zeros({std::int64_t{1} << 62}), std::bad_alloc);
}

TEST(Tensor, FromBufferKeepsTheBufferAlive) {
  std::int64_t base = allocator_stats().bytes_in_use;
  Tensor t;
  {
    auto buf = Buffer::allocate(32);
    t = Tensor::from_buffer(buf, {8}, DType::float32);
  }
  EXPECT_EQ(allocator_stats().bytes_in_use, base + 32);
  t = Tensor();
  EXPECT_EQ(allocator_stats().bytes_in_use, base);
}

TEST(Tensor, EmptyOrReusedTakesASoleOwnersBufferOfTheSameBytesWhateverItsShape) {
  Tensor last = Tensor::empty({4, 6}, DType::float32);
  const void* data = last.raw_data();
  Tensor same = Tensor::empty_or_reused(std::move(last), {4, 6}, DType::float32);
  EXPECT_EQ(same.raw_data(), data);
  // Last step's output was a reshape of what is wanted now (or bfloat16 of twice the elements).
  Tensor reshaped = Tensor::empty_or_reused(std::move(same), {2, 3, 4}, DType::float32);
  EXPECT_EQ(reshaped.raw_data(), data);
  EXPECT_EQ(reshaped.shape(), (Shape{2, 3, 4}));
  Tensor halves = Tensor::empty_or_reused(std::move(reshaped), {48}, DType::bfloat16);
  EXPECT_EQ(halves.raw_data(), data);
  EXPECT_EQ(halves.dtype(), DType::bfloat16);
}

TEST(Tensor, EmptyOrReusedAllocatesWhenTheBufferIsSharedOrItsSizeDiffers) {
  Tensor held = Tensor::empty({8}, DType::float32);
  Tensor other_handle = held;
  EXPECT_NE(Tensor::empty_or_reused(std::move(held), {8}, DType::float32).raw_data(), other_handle.raw_data());
  Tensor view_of = Tensor::empty({8}, DType::float32);
  Tensor view = Tensor::from_buffer(view_of.buffer(), {2, 4}, DType::float32);
  EXPECT_NE(Tensor::empty_or_reused(std::move(view), {8}, DType::float32).raw_data(), view_of.raw_data());
  Tensor longer = Tensor::empty({9}, DType::float32);
  const void* data = longer.raw_data();
  EXPECT_NE(Tensor::empty_or_reused(std::move(longer), {8}, DType::float32).raw_data(), data);
}

TEST(TensorSpec, ToStringIsDTypeThenShape) {
  EXPECT_EQ((TensorSpec{{32, 784}, DType::float32}).to_string(), "float32[32,784]");
  EXPECT_EQ((TensorSpec{{}, DType::int64}).to_string(), "int64[]");
  EXPECT_EQ((TensorSpec{{2}, DType::bool_}), (TensorSpec{{2}, DType::bool_}));
  EXPECT_NE((TensorSpec{{2}, DType::bool_}), (TensorSpec{{2}, DType::int32}));
}

TEST(TensorToString, NestsRowsByShape) {
  EXPECT_EQ(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).to_string(), "float32[2,3] [[1, 2, 3], [4, 5, 6]]");
  EXPECT_EQ(Tensor::from_vector<float>({1.5f, -2}, {2}).to_string(), "float32[2] [1.5, -2]");
  EXPECT_EQ(Tensor::from_vector<std::int32_t>({1, 2, 3, 4}, {2, 1, 2}).to_string(),
            "int32[2,1,2] [[[1, 2]], [[3, 4]]]");
}

TEST(TensorToString, ScalarsPrintWithoutBrackets) {
  EXPECT_EQ(Tensor::scalar(0.25).to_string(), "float32[] 0.25");
  EXPECT_EQ(Tensor::scalar(1, DType::bool_).to_string(), "bool[] 1");
}

TEST(TensorToString, IntegersPrintInFull) {
  EXPECT_EQ(Tensor::from_vector<std::int64_t>({1234567, -9876543210}, {2}).to_string(),
            "int64[2] [1234567, -9876543210]");
}

TEST(TensorToString, EmptyTensorsPrintEmptyBrackets) {
  EXPECT_EQ(Tensor::zeros({0}).to_string(), "float32[0] []");
  EXPECT_EQ(Tensor::zeros({2, 0}, DType::int32).to_string(), "int32[2,0] [[], []]");
}

TEST(TensorToString, LongTensorsAreElidedAfterSixteenValues) {
  std::vector<std::int32_t> values(40);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(i);
  EXPECT_EQ(Tensor::from_vector(values, {40}).to_string(),
            "int32[40] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ...]");
  EXPECT_EQ(Tensor::from_vector(values, {2, 20}).to_string(),
            "int32[2,20] [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ...], ...]");
  std::string many = Tensor::zeros({1000, 1000}).to_string();
  EXPECT_LT(many.size(), 200u) << many;
}

TEST(TensorToString, SixteenValuesPrintWithoutElision) {
  std::vector<float> values(16, 1.0f);
  std::string s = Tensor::from_vector(values, {4, 4}).to_string();
  EXPECT_EQ(s.find("..."), std::string::npos) << s;
  EXPECT_EQ(s, "float32[4,4] [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]");
}

TEST(TensorToString, BFloat16PrintsItsRoundedValue) {
  EXPECT_EQ(Tensor::full({1}, 3.14159, DType::bfloat16).to_string(), "bfloat16[1] [3.14062]");
}

}  // namespace
}  // namespace kestrel
