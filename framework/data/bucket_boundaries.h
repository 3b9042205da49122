// Bucket boundaries chosen from the data: for a budget of compiled shapes, the padded lengths that
// waste the fewest padding tokens.
//
//   std::vector<std::int64_t> lengths = {5, 7, 9, 30, 31, 62};
//   data::choose_bucket_boundaries(lengths, 2);      // {10, 63}: pad to 9 and to 62
//   data::choose_bucket_boundaries(lengths, 2, 8);   // {33, 65}: pad to 32 and to 64
//
// Every distinct padded length is one more program for jit_compile to build (rule 3), and every
// padding token is computed and thrown away. Padding each batch to the longest sequence of the
// whole dataset costs one shape and the most padding; bucket_by_sequence_length with a boundary
// per length costs no padding and a shape per length. Between them, with at most `max_shapes`
// padded lengths L1 < L2 < ... (each a multiple of `pad_to_multiple_of`, the last at least the
// longest sequence), a sequence pads to the smallest Lj that holds it; the lengths chosen are those
// that minimize the total padding over the given sequences, found exactly by dynamic programming
// over the distinct padded lengths (O(max_shapes x distinct^2) time).
//
// The boundaries are in bucket_by_sequence_length's form, each one past its padded length (bucket
// j holds lengths in [L(j-1) + 1, Lj + 1) and pads to Lj with pad_to_bucket_boundary), so they go
// straight into it; bucket_by_sequence_length with BucketOptions::max_shapes does all of this.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kestrel::data {

/// The strictly increasing boundaries (at most max_shapes, fewer when fewer lengths occur) that
/// pad `lengths` least, each padded length a multiple of pad_to_multiple_of, as above. Throws
/// ValueError for no lengths, a negative length, max_shapes or pad_to_multiple_of below 1, each
/// naming the value.
std::vector<std::int64_t> choose_bucket_boundaries(std::span<const std::int64_t> lengths, int max_shapes,
                                                   std::int64_t pad_to_multiple_of = 1);

}  // namespace kestrel::data
