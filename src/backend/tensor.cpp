#include "backend/tensor.h"

#include "util/error.h"

namespace ct {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

Shape::Shape(std::initializer_list<int64_t> list) {
  check(list.size() <= 4, "Shape: at most 4 dimensions, got ", list.size());
  for (int64_t d : list) dims[static_cast<size_t>(ndim++)] = d;
}

int64_t Shape::numel() const {
  if (ndim == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (ndim != other.ndim) return false;
  for (int i = 0; i < ndim; ++i)
    if (dims[static_cast<size_t>(i)] != other.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[static_cast<size_t>(i)]);
  return s + "]";
}

Tensor Tensor::reshaped(Shape new_shape) const {
  check(new_shape.numel() == numel(), "reshape ", shape.to_string(), " -> ", new_shape.to_string(),
        ": element counts differ");
  Tensor t = *this;
  t.shape = new_shape;
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  check(shape.ndim >= 1 && 0 <= begin && begin <= end && end <= shape[0], "rows [", begin, ", ", end,
        ") out of range for ", shape.to_string());
  int64_t row_elems = shape[0] > 0 ? numel() / shape[0] : 0;
  Tensor t = *this;
  t.data = static_cast<char*>(data) + static_cast<size_t>(begin * row_elems) * dtype_size(dtype);
  t.shape.dims[0] = end - begin;
  return t;
}

}  // namespace ct
