#pragma once
// Element conversion between dtypes, shared by upload, download and copy.
#include <cstdint>

#include "backend/tensor.h"

namespace ct {

// dst[i] = src[i] for i < count, converted from src_dtype to dst_dtype: any pair of f32, f64 and bf16
// (into bf16 rounding to nearest even), or i32 to i32. Other pairs are a ct::Error naming `op`.
void convert_elements(const char* op, void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t count);

}  // namespace ct
