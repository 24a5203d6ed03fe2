// Element types and reduction operators shared by the C++ and C APIs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "coll/export.h"

namespace coll {

// The order matches collDataType_t in coll.h; do not reorder.
enum class DataType : int32_t { f32, f64, f16, bf16, i8, u8, i32, u32, i64, u64 };
inline constexpr int kNumDataTypes = 10;

// The order matches collRedOp_t in coll.h; do not reorder.
enum class ReduceOp : int32_t { sum, prod, min, max, avg };
inline constexpr int kNumReduceOps = 5;

COLL_API bool isValid(DataType t);
COLL_API bool isValid(ReduceOp op);

// Bytes per element; 0 for an invalid type.
COLL_API size_t sizeOf(DataType t);

COLL_API const char* toString(DataType t);
COLL_API const char* toString(ReduceOp op);

// Accepts the names toString prints and nccl-tests' names ("float", "half", "bfloat16", "int32", ...).
COLL_API std::optional<DataType> parseDataType(std::string_view name);
COLL_API std::optional<ReduceOp> parseReduceOp(std::string_view name);

}  // namespace coll
