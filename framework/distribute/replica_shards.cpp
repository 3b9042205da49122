#include "framework/distribute/replica_shards.h"

#include <cstring>
#include <string>

#include "framework/core/error.h"

namespace kestrel::distribute {

std::int64_t rows_per_replica(std::int64_t global_rows, int replicas, std::string_view where, std::string_view fix) {
  if (replicas < 1) {
    throw ValueError(std::string(where) + ": the number of replicas must be >= 1, got " + std::to_string(replicas));
  }
  if (global_rows < 1 || global_rows % replicas != 0) {
    throw ValueError(std::string(where) + ": a global batch of " + std::to_string(global_rows) +
                     " rows does not divide by the " + std::to_string(replicas) + " replicas; " + std::string(fix));
  }
  return global_rows / replicas;
}

namespace {

std::size_t row_bytes(const Tensor& t) {
  return t.shape()[0] == 0 ? 0 : t.nbytes() / static_cast<std::size_t>(t.shape()[0]);
}

}  // namespace

void shard_rows(const Tensor& global, int replicas, std::vector<Tensor>& shards, std::string_view where) {
  shards.resize(static_cast<std::size_t>(replicas));
  if (!global.defined()) {
    for (Tensor& shard : shards) shard = Tensor();
    return;
  }
  if (global.rank() == 0) {
    throw ShapeError(std::string(where) + ": a batch's " + global.spec().to_string() +
                     " is a scalar; every tensor of a batch has a row per sample");
  }
  const std::int64_t rows = rows_per_replica(global.shape()[0], replicas, where,
                                             "use a global batch size that is a multiple of the replicas");
  Shape shape = global.shape();
  shape[0] = rows;
  const std::size_t bytes = row_bytes(global) * static_cast<std::size_t>(rows);
  const auto* from = static_cast<const std::byte*>(global.raw_data());
  for (std::size_t r = 0; r < shards.size(); ++r) {
    shards[r] = Tensor::empty_or_reused(std::move(shards[r]), shape, global.dtype());
    if (bytes > 0) std::memcpy(shards[r].view().data, from + r * bytes, bytes);
  }
}

Tensor join_rows(const std::vector<Tensor>& per_replica, Tensor reused) {
  std::size_t defined = 0;
  for (const Tensor& t : per_replica) defined += t.defined() ? 1 : 0;
  if (defined == 0) return Tensor();
  const Tensor& first = per_replica.at(0);
  Shape common = first.shape();  // every row's shape, with no rows
  common[0] = 0;
  Shape shape = common;
  for (const Tensor& t : per_replica) {
    Shape rest = t.defined() ? t.shape() : Shape{};
    if (rest.rank() > 0) rest[0] = 0;
    if (!t.defined() || t.dtype() != first.dtype() || rest != common) {
      throw ShapeError("join_rows: replica values " + first.spec().to_string() + " and " +
                       (t.defined() ? t.spec().to_string() : std::string("undefined")) +
                       " differ beyond their rows; every replica brings the same value to a merge point");
    }
    shape[0] += t.shape()[0];
  }
  Tensor out = Tensor::empty_or_reused(std::move(reused), shape, first.dtype());
  auto* to = static_cast<std::byte*>(out.view().data);
  for (const Tensor& t : per_replica) {
    if (t.nbytes() > 0) std::memcpy(to, t.raw_data(), t.nbytes());
    to += t.nbytes();
  }
  return out;
}

}  // namespace kestrel::distribute
