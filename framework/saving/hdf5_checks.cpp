#include "framework/saving/hdf5_checks.h"

#include <hdf5.h>

#include <algorithm>
#include <vector>

namespace kestrel::saving::h5 {
namespace {

// Numbers in a weight file are at most 8 bytes (16 for a long double).
constexpr std::size_t kMaxElementBytes = 16;
// HDF5 keeps a compact dataset's data in its object header, which is at most 64 KiB.
constexpr std::uint64_t kMaxCompactBytes = 64 * 1024;

std::optional<std::uint64_t> product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::string bytes(std::uint64_t n) { return std::to_string(n) + " bytes"; }

std::optional<std::string> contiguous_problem(Hid dataset, std::uint64_t needed, std::uint64_t length) {
  const haddr_t offset = H5Dget_offset(dataset);
  if (offset == HADDR_UNDEF) return std::nullopt;  // never written: reads as the fill value
  const hsize_t stored = H5Dget_storage_size(dataset);
  if (stored < needed) return "its shape needs " + bytes(needed) + " of data but it stores " + bytes(stored);
  if (offset > length || stored > length - offset) {
    return "its " + bytes(stored) + " of data at byte " + std::to_string(offset) + " run past the end of the file (" +
           bytes(length) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> chunked_problem(Hid dataset, Hid plist, std::uint64_t length) {
  Id space(H5Dget_space(dataset), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) return "its shape cannot be read";
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), max_dims(dims.size()), chunk(dims.size());
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data()) < 0 ||
      H5Pget_chunk(plist, rank, chunk.data()) != rank) {
    return "its chunk shape cannot be read";
  }
  // A chunk is allocated whole when read: one larger than a fixed-size dataset is damage.
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (max_dims[i] != H5S_UNLIMITED && chunk[i] > std::max<hsize_t>(dims[i], 1)) {
      return "its chunks are " + std::to_string(chunk[i]) + " long in dimension " + std::to_string(i) +
             ", which is only " + std::to_string(dims[i]) + " long";
    }
  }
  if (H5Dget_storage_size(dataset) > length) return "its chunks claim more bytes than the file holds";
  return std::nullopt;
}

}  // namespace

std::uint64_t file_length(Hid object) {
  Id file(H5Iget_file_id(object), H5Fclose);
  hsize_t length = 0;
  if (!file.valid() || H5Fget_filesize(file.get(), &length) < 0) return 0;
  return length;
}

std::optional<std::string> dataset_storage_problem(Hid dataset, Hid type, std::uint64_t numel) {
  const std::size_t element = H5Tget_size(type);
  if (element == 0 || element > kMaxElementBytes) {
    return "its elements are " + bytes(element) + " wide; a number is at most " + bytes(kMaxElementBytes);
  }
  const std::optional<std::uint64_t> needed = product(numel, element);
  if (!needed) return "its shape holds more bytes than any file";
  Id plist(H5Dget_create_plist(dataset), H5Pclose);
  if (!plist.valid()) return "its storage layout cannot be read";
  const std::uint64_t length = file_length(dataset);
  switch (H5Pget_layout(plist.get())) {
    case H5D_CONTIGUOUS: return contiguous_problem(dataset, *needed, length);
    case H5D_COMPACT:
      if (*needed > kMaxCompactBytes || H5Dget_storage_size(dataset) < *needed) {
        return "its compact storage does not hold the " + bytes(*needed) + " its shape needs";
      }
      return std::nullopt;
    case H5D_CHUNKED: return chunked_problem(dataset, plist.get(), length);
    default: return "its storage layout is not one a weight file uses";
  }
}

std::optional<std::string> attribute_size_problem(Hid attribute, std::uint64_t count, std::uint64_t width) {
  // Every element of an attribute, fixed-length or a variable-length reference, is stored in the file.
  const std::optional<std::uint64_t> size = product(count, width);
  const std::uint64_t length = file_length(attribute);
  if (!size || *size > length) {
    return "it claims " + std::to_string(count) + " elements of " + bytes(width) + ", more than the file's " +
           bytes(length);
  }
  return std::nullopt;
}

}  // namespace kestrel::saving::h5
