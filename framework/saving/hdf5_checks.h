// Checks made on a weight file's objects before libhdf5 reads their data, so that a damaged file
// fails with an IOError naming the object instead of crashing, or allocating what the damage
// claims, inside libhdf5.
//
//   if (auto problem = h5::dataset_storage_problem(dataset, type, numel)) fail(*problem);
//
// Checked: a dataset's element size, and that its stored bytes fit in the file and agree with its
// shape (contiguous and compact layouts), or that its chunks are no larger than the dataset
// (chunked layout); an attribute's size against the file's length, before a buffer is sized by it.
//
// Not checkable from outside libhdf5 (its own format, parsed by H5Fopen, H5Gopen2, H5Dopen2,
// H5Aexists and H5Aopen): the superblock, object headers, B-trees, local and global heaps. The
// layout h5py and Keras write (superblock 0, version 1 object headers) carries no checksums, so
// a damaged structure there still reaches libhdf5 1.10, which fuzzing shows
//   - overflows a heap buffer decoding an attribute message whose data is larger than the
//     message (under H5Aexists, from Object::has_attribute);
//   - allocates an object header of the size the damage claims (up to 512 GiB, under H5Fopen,
//     H5Gopen2, H5Dopen2): outside AddressSanitizer the allocation fails and libhdf5 reports it;
//   - leaks a few bytes of its own when H5Fopen fails.
// Checking these ahead would mean parsing HDF5's format beside libhdf5. Variable-length strings
// live in the global heap, whose lengths libhdf5 reads itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/saving/hdf5_handles.h"

namespace kestrel::saving::h5 {

/// The length in bytes of the file that holds object.
std::uint64_t file_length(Hid object);

/// Why the dataset's stored data cannot be what `numel` elements of `type` need, or nullopt.
std::optional<std::string> dataset_storage_problem(Hid dataset, Hid type, std::uint64_t numel);

/// Why an attribute of `count` elements of `width` bytes cannot be in the file, or nullopt.
std::optional<std::string> attribute_size_problem(Hid attribute, std::uint64_t count, std::uint64_t width);

}  // namespace kestrel::saving::h5
