// Variable::tie_to: after the tie, every handle of a variable reads, writes and trains another's slot.
#include <gtest/gtest.h>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/variable.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(VariableTie, EveryHandleFollowsTheSource) {
  Variable table("embedding/table", Tensor::full({2, 3}, 1.0));
  Variable head("head/kernel", Tensor::full({2, 3}, 7.0));
  const Variable copy_held_elsewhere = head;  // as a layer's member and its weight list both hold one
  EXPECT_FALSE(head.is_same(table));

  head.tie_to(table);
  EXPECT_TRUE(head.is_same(table));
  EXPECT_TRUE(copy_held_elsewhere.is_same(table));
  EXPECT_TRUE(head.is_tied());
  EXPECT_FALSE(table.is_tied());
  EXPECT_EQ(head.id(), table.id());
  EXPECT_EQ(head.name(), "head/kernel");  // a tied variable keeps its own name
  EXPECT_EQ(copy_held_elsewhere.value().to_vector<float>(), std::vector<float>(6, 1.0f));  // the source's value

  copy_held_elsewhere.assign(Tensor::full({2, 3}, 4.0));  // one slot: a write through either is seen by both
  EXPECT_EQ(table.value().to_vector<float>(), std::vector<float>(6, 4.0f));
  EXPECT_EQ(unique_variables({head, table, copy_held_elsewhere}).size(), 1u);
}

TEST(VariableTie, GradientsOfBothUsesReachTheOneVariable) {
  Variable table("table", Tensor::from_vector<float>({1, 2}, {2}));
  Variable head("head", Tensor::zeros({2}));
  head.tie_to(table);
  GradientTape tape;
  Tensor loss = ops::add(ops::sum(ops::multiply(table.value(), table.value())), ops::sum(head.value()));
  Tensor gradient = tape.gradient(loss, {table.value()})[0];
  EXPECT_EQ(gradient.to_vector<float>(), (std::vector<float>{3, 5}));  // 2x + 1
}

TEST(VariableTie, ChainsAndRepeatsAreOneVariable) {
  Variable a("a", Tensor::full({2}, 1.0)), b("b", Tensor::full({2}, 2.0)), c("c", Tensor::full({2}, 3.0));
  b.tie_to(a);
  c.tie_to(b);  // to b's slot, which is a's
  EXPECT_TRUE(c.is_same(a));
  b.tie_to(a);  // again: nothing changes
  a.tie_to(c);  // already one variable: no cycle
  c.assign(Tensor::full({2}, 5.0));
  EXPECT_EQ(a.value().to_vector<float>(), (std::vector<float>{5, 5}));

  // Re-tying a tied variable moves every variable tied to it along.
  Variable d("d", Tensor::full({2}, 9.0));
  b.tie_to(d);
  EXPECT_TRUE(b.is_same(d));
  EXPECT_FALSE(a.is_same(d));  // a was the source, not tied to b
}

TEST(VariableTie, ShapeAndDtypeMustMatch) {
  Variable table("embedding/table", Tensor::zeros({4, 3}));
  std::string m = error_message<ShapeError>([&] { Variable("head/kernel", Tensor::zeros({3, 4})).tie_to(table); });
  EXPECT_TRUE(contains(m, "cannot tie variable 'head/kernel'")) << m;
  EXPECT_TRUE(contains(m, "'embedding/table'")) << m;
  EXPECT_TRUE(contains(m, "[3,4]") || contains(m, "[3, 4]")) << m;
  m = error_message<TypeError>([&] { Variable("ids", Tensor::zeros({4, 3}, DType::int32)).tie_to(table); });
  EXPECT_TRUE(contains(m, "dtypes differ")) << m;
  EXPECT_THROW(Variable().tie_to(table), ValueError);
}

}  // namespace
}  // namespace kestrel
