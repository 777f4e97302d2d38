#pragma once
// A Tensor is a typed, shaped view of memory that belongs to a backend (host memory for the CPU
// backend, device memory for CUDA). It owns nothing: Buffer (backend.h) owns the memory.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace ct {

enum class DType : uint8_t {
  f32,   // master weights, gradients, optimizer state, logits and losses
  f64,   // the CPU backend's reference precision, used by the gradient tests
  bf16,  // compute copies of weights and activations on backends that support it
  i32,   // token ids and targets (negative target = ignored)
};

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// Row-major shape of up to 4 dimensions.
struct Shape {
  std::array<int64_t, 4> dims{0, 0, 0, 0};
  int ndim = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> list);
  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t numel() const;
  bool operator==(const Shape& other) const;
  std::string to_string() const;  // "[4, 256]"
};

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;

  int64_t numel() const { return shape.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool empty() const { return data == nullptr; }

  template <typename T>
  T* as() const { return static_cast<T*>(data); }

  // The same memory seen with another shape of equal element count (checked).
  Tensor reshaped(Shape new_shape) const;
  // Rows [begin, end) of the first dimension, as a tensor of the same rank.
  Tensor rows(int64_t begin, int64_t end) const;
};

}  // namespace ct
