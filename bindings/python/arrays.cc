// numpy arrays as coll buffers: C-contiguous, aligned, native byte order, one of the dtypes
// coll reduces (bfloat16 has no numpy dtype, so it is not reachable from here).
#include <string>

#include "bindings.h"

namespace coll::python {

namespace {

std::optional<DataType> dataTypeOf(const py::dtype& dt) {
  const char order = dt.byteorder();
  if (order == '>') return std::nullopt;  // little-endian hosts only; '=', '<' and '|' are native
  switch (dt.kind()) {
    case 'f':
      if (dt.itemsize() == 4) return DataType::f32;
      if (dt.itemsize() == 8) return DataType::f64;
      if (dt.itemsize() == 2) return DataType::f16;
      break;
    case 'i':
      if (dt.itemsize() == 1) return DataType::i8;
      if (dt.itemsize() == 4) return DataType::i32;
      if (dt.itemsize() == 8) return DataType::i64;
      break;
    case 'u':
      if (dt.itemsize() == 1) return DataType::u8;
      if (dt.itemsize() == 4) return DataType::u32;
      if (dt.itemsize() == 8) return DataType::u64;
      break;
  }
  return std::nullopt;
}

std::string typeName(py::handle object) { return py::str(py::type::handle_of(object).attr("__name__")); }

}  // namespace

Buffer asBuffer(py::handle object, const char* what, Access access) {
  if (!py::isinstance<py::array>(object))
    throw py::type_error(std::string(what) + " must be a numpy.ndarray, got " + typeName(object));
  Buffer b;
  b.array = py::reinterpret_borrow<py::array>(object);
  auto type = dataTypeOf(b.array.dtype());
  if (!type)
    throw py::type_error(std::string(what) + ": dtype " + std::string(py::str(b.array.dtype())) +
                         " is not supported (float16/32/64, int8/32/64, uint8/32/64 in native byte order)");
  const int flags = b.array.flags();
  if (!(flags & py::array::c_style))
    throw py::value_error(std::string(what) + " must be C-contiguous (use numpy.ascontiguousarray)");
  if (!(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw py::value_error(std::string(what) + " must be aligned to its element size");
  if (access == Access::write && !b.array.writeable())
    throw py::value_error(std::string(what) + " is read-only but the op writes it");
  b.type = *type;
  b.count = static_cast<size_t>(b.array.size());
  b.data = const_cast<void*>(b.array.data());  // written only when `access` is write (checked above)
  return b;
}

void requireSameType(const Buffer& a, const Buffer& b) {
  if (a.type != b.type)
    throw py::type_error(std::string("send and recv must have the same dtype, got ") + toString(a.type) + " and " +
                         toString(b.type));
}

py::dtype dtypeOf(DataType type) {
  switch (type) {
    case DataType::f32: return py::dtype("float32");
    case DataType::f64: return py::dtype("float64");
    case DataType::f16: return py::dtype("float16");
    case DataType::i8: return py::dtype("int8");
    case DataType::u8: return py::dtype("uint8");
    case DataType::i32: return py::dtype("int32");
    case DataType::u32: return py::dtype("uint32");
    case DataType::i64: return py::dtype("int64");
    case DataType::u64: return py::dtype("uint64");
    case DataType::bf16: break;
  }
  throw py::type_error(std::string("no numpy dtype for ") + toString(type));
}

py::array newArray(DataType type, const std::vector<py::ssize_t>& shape) { return py::array(dtypeOf(type), shape); }

py::array libraryArray(const std::vector<py::ssize_t>& shape, const py::dtype& dtype) {
  if (!dataTypeOf(dtype)) throw py::type_error("coll.alloc: dtype " + std::string(py::str(static_cast<py::handle>(dtype))) + " is not one coll reduces");
  size_t bytes = static_cast<size_t>(dtype.itemsize());
  for (py::ssize_t d : shape) {
    if (d < 0) throw py::value_error("coll.alloc: negative dimension " + std::to_string(d));
    if (d > 0 && bytes > SIZE_MAX / static_cast<size_t>(d)) throw py::value_error("coll.alloc: the shape overflows");
    bytes *= static_cast<size_t>(d);
  }
  void* p = memAlloc(bytes);  // coll::Error (translated by errors.cc) if the system refuses
  py::capsule owner(p, [](void* q) { memFree(q); });  // freed with the last array viewing it
  return py::array(dtype, shape, p, owner);
}

}  // namespace coll::python
