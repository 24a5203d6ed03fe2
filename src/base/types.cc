#include "coll/types.h"

#include "coll/error.h"

#include <array>

namespace coll {
namespace {

struct TypeInfo {
  const char* name;
  size_t size;
};

// Indexed by DataType; the order is fixed by the C API.
constexpr std::array<TypeInfo, kNumDataTypes> kTypes = {{
    {"f32", 4}, {"f64", 8}, {"f16", 2}, {"bf16", 2}, {"i8", 1},
    {"u8", 1},  {"i32", 4}, {"u32", 4}, {"i64", 8},  {"u64", 8},
}};

constexpr std::array<const char*, kNumReduceOps> kOpNames = {"sum", "prod", "min", "max", "avg"};

struct Alias {
  std::string_view name;
  DataType type;
};

// The names nccl-tests takes for -d, so that its command lines work with coll's benches
// unchanged. "int" and "char" are the C spellings its older versions printed.
constexpr std::array<Alias, 12> kNcclTypeNames = {{
    {"float", DataType::f32},
    {"double", DataType::f64},
    {"half", DataType::f16},
    {"bfloat16", DataType::bf16},
    {"int8", DataType::i8},
    {"char", DataType::i8},
    {"uint8", DataType::u8},
    {"int32", DataType::i32},
    {"int", DataType::i32},
    {"uint32", DataType::u32},
    {"int64", DataType::i64},
    {"uint64", DataType::u64},
}};

}  // namespace

bool isValid(DataType t) {
  auto i = static_cast<int32_t>(t);
  return i >= 0 && i < kNumDataTypes;
}

bool isValid(ReduceOp op) {
  auto i = static_cast<int32_t>(op);
  return i >= 0 && i < kNumReduceOps;
}

size_t sizeOf(DataType t) { return isValid(t) ? kTypes[static_cast<size_t>(t)].size : 0; }

// Invalid values print as "invalid" rather than crashing: these strings end up in error
// messages about the very arguments that were wrong.
const char* toString(DataType t) {
  return isValid(t) ? kTypes[static_cast<size_t>(t)].name : "invalid";
}

const char* toString(ReduceOp op) {
  return isValid(op) ? kOpNames[static_cast<size_t>(op)] : "invalid";
}

// Names are matched exactly (case-sensitive), as nccl-tests does.
std::optional<DataType> parseDataType(std::string_view name) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    if (name == kTypes[i].name) return static_cast<DataType>(i);
  }
  for (const Alias& alias : kNcclTypeNames) {
    if (name == alias.name) return alias.type;
  }
  return std::nullopt;
}

// nccl-tests also takes "all" (run every op); that is a bench option, not an op, so the
// bench expands it itself.
std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (int i = 0; i < kNumReduceOps; ++i) {
    if (name == kOpNames[i]) return static_cast<ReduceOp>(i);
  }
  return std::nullopt;
}

const char* toString(ErrorCode code) {
  switch (code) {
    case ErrorCode::Timeout: return "Timeout";
    case ErrorCode::PeerLost: return "PeerLost";
    case ErrorCode::Mismatch: return "Mismatch";
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::Unsupported: return "Unsupported";
    case ErrorCode::Transport: return "Transport";
    case ErrorCode::Internal: return "Internal";
  }
  return "invalid";
}

}  // namespace coll
