#include "framework/saving/hdf5_handles.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/saving/hdf5_checks.h"
#include "framework/saving/save_steps.h"

namespace kestrel::saving::h5 {

static_assert(std::is_same_v<hid_t, Hid>, "HDF5's hid_t must be a 64-bit integer (HDF5 1.10 or later)");
static_assert(std::is_same_v<herr_t, int>, "HDF5's herr_t must be int");

namespace {

herr_t keep_deepest(unsigned /*n*/, const H5E_error2_t* entry, void* out) {
  // The walk goes from the API call down; the last entry is the most specific reason.
  if (entry->desc != nullptr && entry->desc[0] != '\0') *static_cast<std::string*>(out) = entry->desc;
  return 0;
}

/// HDF5's reason for the last failure on this thread (empty if none), clearing the stack.
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_deepest, &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason;
}

/// A predefined type or property list: owned by HDF5, so never closed.
Id borrowed(hid_t id) { return Id(id, nullptr); }

/// The file type and in-memory type that store a dtype (bool uses h5py's enum of int8).
struct StorageTypes {
  Id file;
  Id memory;
};

Id bool_enum() {
  Id type(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  if (!type.valid()) return type;
  const std::int8_t no = 0;
  const std::int8_t yes = 1;
  H5Tenum_insert(type.get(), "FALSE", &no);
  H5Tenum_insert(type.get(), "TRUE", &yes);
  return type;
}

StorageTypes storage_types(DType dtype) {
  switch (dtype) {
    case DType::float32: return {borrowed(H5T_IEEE_F32LE), borrowed(H5T_NATIVE_FLOAT)};
    case DType::bfloat16: return {borrowed(H5T_STD_U16LE), borrowed(H5T_NATIVE_UINT16)};
    case DType::int32: return {borrowed(H5T_STD_I32LE), borrowed(H5T_NATIVE_INT32)};
    case DType::int64: return {borrowed(H5T_STD_I64LE), borrowed(H5T_NATIVE_INT64)};
    case DType::bool_: return {bool_enum(), bool_enum()};
  }
  return {};
}

/// Stores one converted element at out[i].
void store(double value, DType dtype, void* out, std::size_t i) {
  switch (dtype) {
    case DType::float32: static_cast<float*>(out)[i] = static_cast<float>(value); return;
    case DType::bfloat16: static_cast<bfloat16*>(out)[i] = bfloat16(static_cast<float>(value)); return;
    case DType::int32: static_cast<std::int32_t*>(out)[i] = static_cast<std::int32_t>(value); return;
    case DType::int64: static_cast<std::int64_t*>(out)[i] = static_cast<std::int64_t>(value); return;
    case DType::bool_: static_cast<bool*>(out)[i] = value != 0.0; return;
  }
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Id::Id(Id&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

bool Id::close() {
  if (id_ < 0) return true;
  const Hid id = id_;
  id_ = -1;
  return closer_ == nullptr || closer_(id) >= 0;
}

// ---- Object: attributes ----

std::string Object::child_path(const std::string& name) const {
  if (name.empty() || name == ".") return path_;
  if (name.front() == '/') return name;
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

void Object::fail(const std::string& what, const std::string& child) const {
  std::string reason = hdf5_reason();
  std::string message = in_quotes(*file_) + ": " + what + " " + child_path(child);
  if (!reason.empty()) message += " (" + reason + ")";
  throw IOError(message);
}

bool Object::has_attribute(const std::string& name) const {
  htri_t found = H5Aexists(id(), name.c_str());
  if (found < 0) fail("cannot look up attribute '" + name + "' of");
  return found > 0;
}

void Object::write_text(const std::string& name, const std::string& value) const {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type.valid() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
    fail("cannot make a string type for attribute '" + name + "' of");
  }
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id attr(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = value.c_str();
  detail::before_save_step(SaveStep::write);
  if (!space.valid() || !attr.valid() || H5Awrite(attr.get(), type.get(), &text) < 0) {
    fail("cannot write attribute '" + name + "' of");
  }
}

void Object::write_bytes(const std::string& name, const std::string& value) const {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type.valid() || H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)) < 0 ||
      H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0) {
    fail("cannot make a string type for attribute '" + name + "' of");
  }
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id attr(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  detail::before_save_step(SaveStep::write);
  if (!space.valid() || !attr.valid() || H5Awrite(attr.get(), type.get(), padded.data()) < 0) {
    fail("cannot write attribute '" + name + "' of");
  }
}

void Object::write_strings(const std::string& name, const std::vector<std::string>& values) const {
  std::size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size());
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type.valid() || H5Tset_size(type.get(), width) < 0 || H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0) {
    fail("cannot make a string type for attribute '" + name + "' of");
  }
  const hsize_t count = values.size();
  Id space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  Id attr(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!space.valid() || !attr.valid()) fail("cannot create attribute '" + name + "' of");
  if (values.empty()) return;
  std::vector<char> packed(width * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) std::memcpy(&packed[i * width], values[i].data(), values[i].size());
  detail::before_save_step(SaveStep::write);
  if (H5Awrite(attr.get(), type.get(), packed.data()) < 0) fail("cannot write attribute '" + name + "' of");
}

std::vector<std::string> Object::read_strings(const std::string& name) const {
  const std::string what = "cannot read attribute '" + name + "' of";
  Id attr(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) fail(what);
  Id type(H5Aget_type(attr.get()), H5Tclose);
  Id space(H5Aget_space(attr.get()), H5Sclose);
  if (!type.valid() || !space.valid()) fail(what);
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) fail(what);
  if (count == 0 || H5Sget_simple_extent_type(space.get()) == H5S_NULL) return {};
  if (H5Tget_class(type.get()) != H5T_STRING) fail("attribute '" + name + "' holds no strings at");

  const auto n = static_cast<std::size_t>(count);
  const bool variable = H5Tis_variable_str(type.get()) > 0;
  // A variable-length string takes at least a byte of the file; a fixed-length one its width.
  if (auto problem = attribute_size_problem(attr.get(), n, variable ? 1 : H5Tget_size(type.get()))) {
    fail("damaged attribute '" + name + "' (" + *problem + ") of");
  }
  std::vector<std::string> out;
  out.reserve(n);
  if (variable) {
    Id memory(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!memory.valid() || H5Tset_size(memory.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(memory.get(), H5Tget_cset(type.get())) < 0) {
      fail(what);
    }
    std::vector<char*> strings(n, nullptr);
    if (H5Aread(attr.get(), memory.get(), strings.data()) < 0) fail(what);
    for (char* s : strings) out.emplace_back(s != nullptr ? s : "");
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(memory.get(), space.get(), H5P_DEFAULT, strings.data());
#else
    H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, strings.data());
#endif
    return out;
  }
  const std::size_t width = H5Tget_size(type.get());
  if (width == 0) fail(what);
  std::vector<char> packed(width * n, '\0');
  // Reading with the file's own type copies the bytes; padding is stripped below.
  if (H5Aread(attr.get(), type.get(), packed.data()) < 0) fail(what);
  const bool space_padded = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
  for (std::size_t i = 0; i < n; ++i) {
    const char* begin = &packed[i * width];
    std::size_t length = strnlen(begin, width);
    if (space_padded) {
      while (length > 0 && begin[length - 1] == ' ') --length;
    }
    out.emplace_back(begin, length);
  }
  return out;
}

std::string Object::read_string(const std::string& name) const {
  std::vector<std::string> values = read_strings(name);
  if (values.size() != 1) {
    fail("attribute '" + name + "' holds " + std::to_string(values.size()) + " strings, expected one, at");
  }
  return values.front();
}

// ---- Dataset ----

Shape Dataset::shape() const {
  Id space(H5Dget_space(id()), H5Sclose);
  if (!space.valid()) fail("cannot read the shape of dataset");
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) fail("dataset holds no data (null dataspace):");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail("cannot read the shape of dataset");
  if (rank > Shape::kMaxRank) {
    fail("dataset has rank " + std::to_string(rank) + ", more than Kestrel's " + std::to_string(Shape::kMaxRank) + ":");
  }
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    fail("cannot read the shape of dataset");
  }
  try {
    return Shape(std::vector<std::int64_t>(dims.begin(), dims.end()));
  } catch (const ShapeError& e) {
    fail(std::string("dataset has an impossible shape (") + e.what() + "):");
  }
}

bool Dataset::is_bfloat16() const { return has_attribute("dtype") && read_string("dtype") == "bfloat16"; }

std::string Dataset::dtype_name() const {
  Id type(H5Dget_type(id()), H5Tclose);
  if (!type.valid()) fail("cannot read the element type of dataset");
  const std::size_t bits = 8 * H5Tget_size(type.get());
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT: return "float" + std::to_string(bits);
    case H5T_ENUM: return "bool";  // h5py's bool
    case H5T_INTEGER:
      if (bits == 16 && is_bfloat16()) return "bfloat16";
      return (H5Tget_sign(type.get()) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
    default: return "non-numeric";
  }
}

Tensor Dataset::read(DType dtype) const {
  const Shape dims = shape();
  Tensor out = Tensor::empty(dims, dtype);
  const auto n = static_cast<std::size_t>(dims.numel());
  if (n == 0) return out;
  void* dst = out.view().data;

  Id type(H5Dget_type(id()), H5Tclose);
  if (!type.valid()) fail("cannot read the element type of dataset");
  const H5T_class_t kind = H5Tget_class(type.get());
  if (kind != H5T_FLOAT && kind != H5T_INTEGER && kind != H5T_ENUM) {
    fail("cannot read dataset (its elements are not numbers):");
  }
  if (auto problem = dataset_storage_problem(id(), type.get(), n)) fail("damaged dataset (" + *problem + "):");
  auto read_as = [&](hid_t memory, void* buffer) {
    if (H5Dread(id(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer) < 0) fail("cannot read dataset");
  };

  if (kind == H5T_INTEGER && H5Tget_size(type.get()) == 2 && is_bfloat16()) {
    std::vector<std::uint16_t> bits(n);
    read_as(H5T_NATIVE_UINT16, bits.data());
    if (dtype == DType::bfloat16) {
      std::memcpy(dst, bits.data(), n * sizeof(std::uint16_t));
    } else {
      for (std::size_t i = 0; i < n; ++i) store(static_cast<float>(bfloat16::from_bits(bits[i])), dtype, dst, i);
    }
    return out;
  }
  if (kind == H5T_ENUM) {
    // h5py stores bool as an enum of int8; read its raw values (0 and 1).
    if (H5Tget_size(type.get()) != 1) fail("cannot read dataset (an enum wider than one byte):");
    Id native(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose);
    std::vector<std::int8_t> raw(n);
    if (!native.valid()) fail("cannot read dataset");
    read_as(native.get(), raw.data());
    for (std::size_t i = 0; i < n; ++i) store(raw[i], dtype, dst, i);
    return out;
  }
  if (dtype == DType::bfloat16 || dtype == DType::bool_) {
    std::vector<double> wide(n);
    read_as(H5T_NATIVE_DOUBLE, wide.data());
    for (std::size_t i = 0; i < n; ++i) store(wide[i], dtype, dst, i);
    return out;
  }
  // HDF5 converts float and integer kinds (float64 files into float32 weights) itself.
  read_as(storage_types(dtype).memory.get(), dst);
  return out;
}

// ---- Group ----

Group Group::create_group(const std::string& name) const {
  Id links(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!links.valid() || H5Pset_create_intermediate_group(links.get(), 1) < 0) fail("cannot create group", name);
  Id group(H5Gcreate2(id(), name.c_str(), links.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!group.valid()) fail("cannot create group", name);
  return Group(std::move(group), file_, child_path(name));
}

Group Group::open_group(const std::string& name) const {
  Id group(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!group.valid()) fail("cannot open group", name);
  return Group(std::move(group), file_, child_path(name));
}

bool Group::exists(const std::string& name) const {
  std::string prefix;
  for (const std::string& part : split_path(name)) {
    prefix += prefix.empty() ? part : "/" + part;
    const htri_t found = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
    if (found <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return true;
}

std::size_t Group::size() const {
  H5G_info_t info;
  if (H5Gget_info(id(), &info) < 0) fail("cannot list group");
  return static_cast<std::size_t>(info.nlinks);
}

Dataset Group::open_dataset(const std::string& name) const {
  Id dataset(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) fail("cannot open dataset", name);
  return Dataset(std::move(dataset), file_, child_path(name));
}

void Group::write_dataset(const std::string& name, const Tensor& value) const {
  const std::string what = "cannot write dataset";
  StorageTypes types = storage_types(value.dtype());
  if (!types.file.valid() || !types.memory.valid()) fail(what, name);
  Id space;
  if (value.rank() == 0) {
    space = Id(H5Screate(H5S_SCALAR), H5Sclose);  // h5py's layout for NumPy scalars
  } else {
    std::vector<hsize_t> dims(value.shape().dims().begin(), value.shape().dims().end());
    space = Id(H5Screate_simple(value.rank(), dims.data(), nullptr), H5Sclose);
  }
  Id links(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!space.valid() || !links.valid() || H5Pset_create_intermediate_group(links.get(), 1) < 0) fail(what, name);
  Id dataset(H5Dcreate2(id(), name.c_str(), types.file.get(), space.get(), links.get(), H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose);
  if (!dataset.valid()) fail(what, name);
  detail::before_save_step(SaveStep::write);
  if (value.numel() > 0 &&
      H5Dwrite(dataset.get(), types.memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.raw_data()) < 0) {
    fail(what, name);
  }
  if (value.dtype() == DType::bfloat16) {
    Dataset(std::move(dataset), file_, child_path(name)).write_text("dtype", "bfloat16");
  }
}

// ---- File ----

File File::create(const std::string& os_path, const std::string& display_name) {
  Id file(H5Fcreate(os_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    std::string reason = hdf5_reason();
    throw IOError(in_quotes(display_name) + ": cannot create the file (writing " + in_quotes(os_path) + ")" +
                  (reason.empty() ? "" : " (" + reason + ")"));
  }
  return File(std::move(file), std::make_shared<const std::string>(display_name));
}

File File::open(const std::string& os_path, const std::string& display_name) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(os_path, error)) {
    throw IOError(in_quotes(display_name) + ": no such file" +
                  (std::filesystem::exists(os_path, error) ? " (it is not a regular file)" : ""));
  }
  Id file(H5Fopen(os_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    std::string reason = hdf5_reason();
    throw IOError(in_quotes(display_name) + ": cannot open it as an HDF5 file; it is corrupt, truncated or not HDF5" +
                  (reason.empty() ? "" : " (" + reason + ")"));
  }
  return File(std::move(file), std::make_shared<const std::string>(display_name));
}

Group File::root() const {
  Id group(H5Gopen2(id_.get(), "/", H5P_DEFAULT), H5Gclose);
  if (!group.valid()) {
    std::string reason = hdf5_reason();
    throw IOError(in_quotes(*name_) + ": cannot open the root group" + (reason.empty() ? "" : " (" + reason + ")"));
  }
  return Group(std::move(group), name_, "/");
}

void File::close() {
  if (!id_.valid()) return;
  detail::before_save_step(SaveStep::flush);
  // Flushing first surfaces write errors (a full disk) that a weak close would defer.
  const bool flushed = H5Fflush(id_.get(), H5F_SCOPE_GLOBAL) >= 0;
  const bool closed = id_.close();
  if (!flushed || !closed) {
    std::string reason = hdf5_reason();
    throw IOError(in_quotes(*name_) + ": cannot finish writing the file" + (reason.empty() ? "" : " (" + reason + ")"));
  }
}

}  // namespace kestrel::saving::h5
