// Op table entries for the shape and indexing ops: reshape (with expand_dims and squeeze),
// broadcast_to, transpose, slice, concat, pad, gather, scatter_add and one_hot.
// References index the inputs element by element in double precision.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/ops/shape_ops.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

using Index = std::vector<std::int64_t>;

// Element `index` of a tensor's values, read row-major.
double at(const std::vector<double>& values, const Shape& shape, const Index& index) {
  std::int64_t flat = 0;
  for (int d = 0; d < shape.rank(); ++d) flat = flat * shape[d] + index[static_cast<std::size_t>(d)];
  return values[static_cast<std::size_t>(flat)];
}

OpCase make_case(OpId op, std::string label, std::function<Inputs()> inputs, std::function<Tensor(const Inputs&)> run,
                 std::function<Tensor(const Inputs&)> reference) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  c.make_inputs = std::move(inputs);
  c.run = std::move(run);
  c.reference = std::move(reference);
  return c;
}

// Reshapes keep the row-major order: the reference is the same values under the new shape.
OpCase reshape_case(std::string label, Shape in, Shape want, std::function<Tensor(const Tensor&)> run) {
  return make_case(
      OpId::reshape, std::move(label), [=] { return Inputs{uniform_tensor(in, 31)}; },
      [=](const Inputs& x) { return run(x[0]); },
      [=](const Inputs& x) { return float_tensor(x[0].to_vector<double>(), want); });
}

OpCase broadcast_case(std::string label, Shape in, Shape out) {
  return make_case(
      OpId::broadcast_to, std::move(label), [=] { return Inputs{uniform_tensor(in, 32)}; },
      [=](const Inputs& x) { return ops::broadcast_to(x[0], out); },
      [=](const Inputs& x) {
        std::vector<double> v = x[0].to_vector<double>();
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index src;
          for (int d = 0; d < in.rank(); ++d) {
            std::int64_t o = i[static_cast<std::size_t>(d + out.rank() - in.rank())];
            src.push_back(in[d] == 1 ? 0 : o);
          }
          return at(v, in, src);
        });
      });
}

// perm as given to ops::transpose (may be empty or negative); `resolved` is the plain permutation.
OpCase transpose_case(std::string label, Shape in, std::vector<int> perm, std::vector<int> resolved,
                      DType dtype = DType::float32) {
  Shape out;
  for (int p : resolved) out.push_back(in[p]);
  OpCase c = make_case(
      OpId::transpose, std::move(label),
      [=] {
        Tensor x = uniform_tensor(in, 33, -100, 100);
        if (dtype == DType::float32) return Inputs{x};
        // Distinct integers that spell their own index (23 is [2,3]), so misplaced elements show.
        return Inputs{tensor_from_index_fn(
            in,
            [](const Index& i) {
              double v = 0;
              for (std::int64_t k : i) v = v * 10 + static_cast<double>(k);
              return v;
            },
            dtype)};
      },
      [=](const Inputs& x) { return ops::transpose(x[0], perm); },
      [=](const Inputs& x) {
        std::vector<double> v = x[0].to_vector<double>();
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index src(i.size());
          for (std::size_t k = 0; k < i.size(); ++k) src[static_cast<std::size_t>(resolved[k])] = i[k];
          return at(v, in, src);
        });
      });
  if (in.numel() > 200)
    c.no_gradient_because = "large input for the tiled kernel; gradients are checked on small cases";
  return c;
}

OpCase slice_case(std::string label, Shape in, Index begin, Index size) {
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    auto ud = static_cast<std::size_t>(d);
    out.push_back(size[ud] == -1 ? in[d] - begin[ud] : size[ud]);
  }
  return make_case(
      OpId::slice, std::move(label), [=] { return Inputs{uniform_tensor(in, 34)}; },
      [=](const Inputs& x) { return ops::slice(x[0], begin, size); },
      [=](const Inputs& x) {
        std::vector<double> v = x[0].to_vector<double>();
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index src(i.size());
          for (std::size_t d = 0; d < i.size(); ++d) src[d] = i[d] + begin[d];
          return at(v, in, src);
        });
      });
}

OpCase concat_case(std::string label, std::vector<Shape> shapes, int axis) {
  int rank = shapes[0].rank();
  int a = axis < 0 ? axis + rank : axis;
  Shape out = shapes[0];
  for (std::size_t i = 1; i < shapes.size(); ++i) out[a] += shapes[i][a];
  return make_case(
      OpId::concat, std::move(label),
      [=] {
        Inputs xs;
        for (std::size_t i = 0; i < shapes.size(); ++i) xs.push_back(uniform_tensor(shapes[i], 35 + i));
        return xs;
      },
      [=](const Inputs& xs) { return ops::concat(xs, axis); },
      [=](const Inputs& xs) {
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index src = i;
          std::size_t which = 0;
          while (src[static_cast<std::size_t>(a)] >= shapes[which][a])
            src[static_cast<std::size_t>(a)] -= shapes[which++][a];
          return at(xs[which].to_vector<double>(), shapes[which], src);
        });
      });
}

OpCase pad_case(std::string label, Shape in, std::vector<std::pair<std::int64_t, std::int64_t>> paddings,
                double constant) {
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    auto [b, e] = paddings[static_cast<std::size_t>(d)];
    out.push_back(b + in[d] + e);
  }
  return make_case(
      OpId::pad, std::move(label), [=] { return Inputs{uniform_tensor(in, 36)}; },
      [=](const Inputs& x) { return ops::pad(x[0], paddings, constant); },
      [=](const Inputs& x) {
        std::vector<double> v = x[0].to_vector<double>();
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index src(i.size());
          for (std::size_t d = 0; d < i.size(); ++d) {
            src[d] = i[d] - paddings[d].first;
            if (src[d] < 0 || src[d] >= in[static_cast<int>(d)]) return constant;
          }
          return at(v, in, src);
        });
      });
}

// indices given as int64 values; `dtype` picks the tensor's index dtype.
Tensor index_tensor(const Index& values, const Shape& shape, DType dtype) {
  if (dtype == DType::int64) return Tensor::from_vector<std::int64_t>(values, shape);
  return Tensor::from_vector<std::int32_t>(std::vector<std::int32_t>(values.begin(), values.end()), shape);
}

OpCase gather_case(std::string label, Shape params, Index indices, Shape index_shape, int axis, DType index_dtype,
                   DType params_dtype = DType::float32) {
  int a = axis < 0 ? axis + params.rank() : axis;
  Shape out;
  for (int d = 0; d < a; ++d) out.push_back(params[d]);
  for (std::int64_t d : index_shape.dims()) out.push_back(d);
  for (int d = a + 1; d < params.rank(); ++d) out.push_back(params[d]);
  OpCase c = make_case(
      OpId::gather, std::move(label),
      [=] {
        Tensor p = uniform_tensor(params, 37);
        if (params_dtype == DType::bfloat16) {
          std::vector<float> f = p.to_vector<float>();
          std::vector<bfloat16> h;
          for (float v : f) h.push_back(bfloat16(v));
          p = Tensor::from_vector(h, params);
        }
        return Inputs{p, index_tensor(indices, index_shape, index_dtype)};
      },
      [=](const Inputs& x) { return ops::gather(x[0], x[1], axis); },
      [=](const Inputs& x) {
        std::vector<double> v = x[0].to_vector<double>();
        std::vector<double> ind = x[1].to_vector<double>();
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index src;
          for (int d = 0; d < a; ++d) src.push_back(i[static_cast<std::size_t>(d)]);
          Index pos(i.begin() + a, i.begin() + a + index_shape.rank());
          src.push_back(static_cast<std::int64_t>(at(ind, index_shape, pos)));
          for (int d = a + 1; d < params.rank(); ++d)
            src.push_back(i[static_cast<std::size_t>(d - 1 + index_shape.rank())]);
          return at(v, params, src);
        });
      });
  if (params_dtype == DType::bfloat16) c.no_gradient_because = "bfloat16 params are too coarse for finite differences";
  return c;
}

OpCase scatter_add_case(std::string label, Shape shape, Index indices, Shape index_shape, int axis, DType index_dtype) {
  int a = axis < 0 ? axis + shape.rank() : axis;
  Shape updates;
  for (int d = 0; d < a; ++d) updates.push_back(shape[d]);
  for (std::int64_t d : index_shape.dims()) updates.push_back(d);
  for (int d = a + 1; d < shape.rank(); ++d) updates.push_back(shape[d]);
  return make_case(
      OpId::scatter_add, std::move(label),
      [=] {
        return Inputs{index_tensor(indices, index_shape, index_dtype), uniform_tensor(updates, 38)};
      },
      [=](const Inputs& x) { return ops::scatter_add(x[0], x[1], shape, axis); },
      [=](const Inputs& x) {
        // Walk every update and add it to its output element: the definition, not the kernel's plan.
        std::vector<double> ind = x[0].to_vector<double>();
        std::vector<double> upd = x[1].to_vector<double>();
        std::vector<double> out(static_cast<std::size_t>(shape.numel()), 0.0);
        Index i(static_cast<std::size_t>(updates.rank()), 0);
        for (double u : upd) {
          Index dst;
          for (int d = 0; d < a; ++d) dst.push_back(i[static_cast<std::size_t>(d)]);
          Index pos(i.begin() + a, i.begin() + a + index_shape.rank());
          dst.push_back(static_cast<std::int64_t>(at(ind, index_shape, pos)));
          for (int d = a + 1; d < shape.rank(); ++d)
            dst.push_back(i[static_cast<std::size_t>(d - 1 + index_shape.rank())]);
          std::int64_t flat = 0;
          for (int d = 0; d < shape.rank(); ++d) flat = flat * shape[d] + dst[static_cast<std::size_t>(d)];
          out[static_cast<std::size_t>(flat)] += u;
          for (int d = updates.rank() - 1; d >= 0; --d) {
            if (++i[static_cast<std::size_t>(d)] < updates[d]) break;
            i[static_cast<std::size_t>(d)] = 0;
          }
        }
        return float_tensor(out, shape);
      });
}

OpCase one_hot_case(std::string label, Index labels, Shape shape, DType index_dtype, std::int64_t depth,
                    ops::OneHotOptions options) {
  Shape out = shape;
  out.push_back(depth);
  OpCase c = make_case(
      OpId::one_hot, std::move(label), [=] { return Inputs{index_tensor(labels, shape, index_dtype)}; },
      [=](const Inputs& x) { return ops::one_hot(x[0], depth, options); },
      [=](const Inputs&) {
        return tensor_from_index_fn(out, [&](const Index& i) {
          Index pos(i.begin(), i.end() - 1);
          return at(std::vector<double>(labels.begin(), labels.end()), shape, pos) == static_cast<double>(i.back())
                     ? options.on_value
                     : options.off_value;
        });
      });
  c.no_gradient_because = "integer input";
  return c;
}

std::vector<OpCase> shape_cases() {
  std::vector<OpCase> cases;
  cases.push_back(reshape_case("reshape_infers_minus_one", {2, 3, 4}, {4, 6}, [](const Tensor& x) {
    return ops::reshape(x, {4, -1});
  }));
  cases.push_back(reshape_case("reshape_to_shape", {6, 2}, {3, 2, 2}, [](const Tensor& x) {
    return ops::reshape(x, Shape{3, 2, 2});
  }));
  cases.push_back(reshape_case("reshape_expand_dims_negative_axis", {2, 3}, {2, 3, 1},
                               [](const Tensor& x) { return ops::expand_dims(x, -1); }));
  cases.push_back(reshape_case("reshape_expand_dims_middle", {2, 3}, {2, 1, 3},
                               [](const Tensor& x) { return ops::expand_dims(x, 1); }));
  cases.push_back(
      reshape_case("reshape_squeeze_all", {1, 3, 1, 2}, {3, 2}, [](const Tensor& x) { return ops::squeeze(x); }));
  cases.push_back(reshape_case("reshape_squeeze_one_axis", {1, 3, 1, 2}, {1, 3, 2},
                               [](const Tensor& x) { return ops::squeeze(x, {-2}); }));

  cases.push_back(broadcast_case("broadcast_to_column_and_new_axis", {3, 1}, {2, 3, 4}));
  cases.push_back(broadcast_case("broadcast_to_row", {4}, {3, 4}));
  cases.push_back(broadcast_case("broadcast_to_from_scalar", {}, {2, 3}));
  cases.push_back(broadcast_case("broadcast_to_middle_axis", {2, 1, 3}, {2, 4, 3}));

  cases.push_back(transpose_case("transpose_2d", {3, 5}, {1, 0}, {1, 0}));
  cases.push_back(transpose_case("transpose_default_reverses", {2, 3, 4}, {}, {2, 1, 0}));
  cases.push_back(transpose_case("transpose_attention_heads", {2, 3, 2, 4}, {0, 2, 1, 3}, {0, 2, 1, 3}));
  cases.push_back(transpose_case("transpose_negative_perm", {2, 3, 4}, {-1, 0, 1}, {2, 0, 1}));
  cases.push_back(transpose_case("transpose_with_unit_axes", {2, 1, 3, 1}, {3, 2, 1, 0}, {3, 2, 1, 0}));
  cases.push_back(transpose_case("transpose_tiled_large", {70, 45}, {1, 0}, {1, 0}));
  cases.push_back(transpose_case("transpose_tiled_batched", {3, 33, 2, 37}, {0, 3, 2, 1}, {0, 3, 2, 1}));
  cases.push_back(transpose_case("transpose_attention_large", {2, 40, 3, 16}, {0, 2, 1, 3}, {0, 2, 1, 3}));
  cases.push_back(transpose_case("transpose_int32", {3, 4}, {1, 0}, {1, 0}, DType::int32));
  cases.back().no_gradient_because = "integer input";

  cases.push_back(slice_case("slice_3d_to_end", {3, 4, 5}, {1, 0, 2}, {2, -1, 3}));
  cases.push_back(slice_case("slice_inner_axis", {4, 6}, {0, 2}, {4, 3}));
  cases.push_back(slice_case("slice_whole_trailing_axes", {4, 2, 3}, {1, 0, 0}, {2, 2, 3}));

  cases.push_back(concat_case("concat_axis_1", {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}}, 1));
  cases.push_back(concat_case("concat_negative_axis", {{2, 3}, {2, 1}}, -1));
  cases.push_back(concat_case("concat_axis_0", {{1, 3}, {2, 3}}, 0));

  cases.push_back(pad_case("pad_2d", {2, 3}, {{1, 0}, {2, 1}}, 0.0));
  cases.push_back(pad_case("pad_constant_middle_axis", {2, 2, 3}, {{0, 0}, {1, 2}, {0, 0}}, 1.5));

  cases.push_back(gather_case("gather_embedding_rows", {5, 3}, {4, 0, 4, 2, 1, 4}, {2, 3}, 0, DType::int32));
  cases.push_back(gather_case("gather_axis_1_int64", {2, 4, 3}, {3, 1, 3}, {3}, 1, DType::int64));
  cases.push_back(gather_case("gather_negative_axis", {3, 4}, {2, 0}, {2}, -1, DType::int64));
  cases.push_back(gather_case("gather_bfloat16_params", {4, 3}, {1, 3}, {2}, 0, DType::int32, DType::bfloat16));

  cases.push_back(scatter_add_case("scatter_add_repeated_rows", {5, 3}, {4, 0, 4, 4}, {4}, 0, DType::int64));
  cases.push_back(scatter_add_case("scatter_add_axis_1_int32", {2, 3, 2}, {2, 2, 0}, {3}, 1, DType::int32));

  cases.push_back(one_hot_case("one_hot_ignores_padding_label", {0, 3, -100, 1, 4, 2}, {2, 3}, DType::int64, 4, {}));
  cases.push_back(one_hot_case("one_hot_int32_custom_values", {2, 0, 1}, {3}, DType::int32, 3,
                               {.dtype = DType::float32, .on_value = 0.9, .off_value = 0.05}));
  return cases;
}

KESTREL_REGISTER_OP_CASES(shape_cases);

}  // namespace
}  // namespace kestrel::testing
