// RAII handles over the HDF5 C API, for Kestrel's weight files.
//
//   h5::silence_errors();
//   h5::File out = h5::File::create("w.h5.tmp-42", "w.h5");   // written under a temporary name
//   h5::Group dense = out.root().create_group("dense");
//   dense.write_strings("weight_names", {"dense/kernel:0", "dense/bias:0"});
//   dense.write_dataset("dense/kernel:0", kernel);            // makes the group "dense/dense" too
//   out.close();
//
//   h5::File in = h5::File::open("w.h5");
//   Tensor k = in.root().open_dataset("dense/dense/kernel:0").read(DType::float32);
//
// Every failure throws IOError naming the file and the object, with HDF5's own reason:
//   'w.h5': cannot open dataset /dense/dense/kernel:0 (object 'kernel:0' doesn't exist)
// These headers do not include <hdf5.h>: only the saving sources see the C API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/shape.h"
#include "framework/core/tensor.h"

namespace kestrel::saving::h5 {

/// HDF5's hid_t (a 64-bit integer since HDF5 1.10; the sources check that it is).
using Hid = std::int64_t;

/// Turns off HDF5's printing of error stacks on this thread: Kestrel reports them as IOError.
void silence_errors();

/// An owned HDF5 identifier, closed by the matching H5*close when the owner goes away.
class Id {
 public:
  using Closer = int (*)(Hid);
  Id() = default;
  Id(Hid id, Closer closer) : id_(id), closer_(closer) {}
  Id(Id&& other) noexcept;
  Id& operator=(Id&& other) noexcept;
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() { reset(); }

  Hid get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  /// Closes now; returns false when HDF5 reports a failure (a file that could not be flushed).
  bool close();
  /// Closes, ignoring failures (destructors cannot report them).
  void reset() { close(); }

 private:
  Hid id_ = -1;
  Closer closer_ = nullptr;
};

/// A group or dataset: something with a path in a file, and attributes.
class Object {
 public:
  /// The object's path in the file ("/dense/dense/kernel:0").
  const std::string& path() const { return path_; }
  /// The file as the user named it (not the temporary name a save writes to).
  const std::string& file_name() const { return *file_; }
  Hid id() const { return id_.get(); }

  bool has_attribute(const std::string& name) const;
  /// A scalar variable-length UTF-8 string, as h5py writes a Python str.
  void write_text(const std::string& name, const std::string& value) const;
  /// A scalar fixed-length byte string, as h5py writes Python bytes.
  void write_bytes(const std::string& name, const std::string& value) const;
  /// A 1-D array of fixed-length byte strings, as h5py writes NumPy's "S" arrays (may be empty).
  void write_strings(const std::string& name, const std::vector<std::string>& values) const;
  /// Reads a string attribute, fixed- or variable-length, scalar or 1-D; an empty attribute of
  /// any type reads as no strings (Keras 2 writes an empty list as an empty float array).
  std::vector<std::string> read_strings(const std::string& name) const;
  /// Reads a string attribute that holds exactly one string.
  std::string read_string(const std::string& name) const;

 protected:
  /// Throws IOError "'<file>': <what> <path>[/<child>] (<HDF5's reason>)".
  [[noreturn]] void fail(const std::string& what, const std::string& child = "") const;
  Object(Id id, std::shared_ptr<const std::string> file, std::string path)
      : id_(std::move(id)), file_(std::move(file)), path_(std::move(path)) {}
  /// The path of a child named by a relative path.
  std::string child_path(const std::string& name) const;

  Id id_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

class Dataset : public Object {
 public:
  /// The stored shape ([] for a scalar dataset).
  Shape shape() const;
  /// True for Keras 3's bfloat16 datasets: uint16 bit patterns with attribute dtype="bfloat16".
  bool is_bfloat16() const;
  /// The stored element type as NumPy names it: "float32", "float64", "bfloat16", "int64", "bool", ...
  std::string dtype_name() const;
  /// The values converted to dtype (float and integer kinds convert as NumPy's astype does).
  Tensor read(DType dtype) const;

 private:
  friend class Group;
  using Object::Object;
};

class Group : public Object {
 public:
  Group create_group(const std::string& name) const;
  Group open_group(const std::string& name) const;
  /// True when the relative path names an existing object (each step is checked in turn).
  bool exists(const std::string& name) const;
  /// Number of direct members.
  std::size_t size() const;
  Dataset open_dataset(const std::string& name) const;
  /// Writes a dataset, creating missing groups along the name ("dense/kernel:0"); bfloat16 is
  /// stored as uint16 with attribute dtype="bfloat16", bool as h5py's enum of int8.
  void write_dataset(const std::string& name, const Tensor& value) const;

 private:
  friend class File;
  using Object::Object;
};

class File {
 public:
  /// Creates (or truncates) os_path for writing; errors speak of display_name.
  static File create(const std::string& os_path, const std::string& display_name);
  /// Opens an existing file read-only; a missing, corrupt or truncated file throws IOError.
  static File open(const std::string& path) { return open(path, path); }
  /// The same for os_path, with errors speaking of display_name (a file extracted from an archive).
  static File open(const std::string& os_path, const std::string& display_name);

  Group root() const;
  const std::string& name() const { return *name_; }
  /// Flushes and closes; throws IOError when the data could not be written.
  void close();

 private:
  File(Id id, std::shared_ptr<const std::string> name) : id_(std::move(id)), name_(std::move(name)) {}
  Id id_;
  std::shared_ptr<const std::string> name_;
};

}  // namespace kestrel::saving::h5
