#include "coll/types.h"

#include <gtest/gtest.h>

#include <string>

namespace coll {
namespace {

TEST(Types, SizesFollowTheEnumOrder) {
  constexpr size_t kSizes[kNumDataTypes] = {4, 8, 2, 2, 1, 1, 4, 4, 8, 8};
  for (int i = 0; i < kNumDataTypes; ++i) {
    EXPECT_EQ(sizeOf(static_cast<DataType>(i)), kSizes[i]) << i;
  }
  EXPECT_EQ(sizeOf(static_cast<DataType>(kNumDataTypes)), 0u);
  EXPECT_EQ(sizeOf(static_cast<DataType>(-1)), 0u);
}

TEST(Types, Validity) {
  EXPECT_TRUE(isValid(DataType::f32));
  EXPECT_TRUE(isValid(DataType::u64));
  EXPECT_FALSE(isValid(static_cast<DataType>(kNumDataTypes)));
  EXPECT_FALSE(isValid(static_cast<DataType>(-1)));
  EXPECT_TRUE(isValid(ReduceOp::sum));
  EXPECT_TRUE(isValid(ReduceOp::avg));
  EXPECT_FALSE(isValid(static_cast<ReduceOp>(kNumReduceOps)));
  EXPECT_FALSE(isValid(static_cast<ReduceOp>(-1)));
}

TEST(Types, NamesRoundTrip) {
  const char* kTypeNames[kNumDataTypes] = {"f32", "f64", "f16", "bf16", "i8",
                                           "u8",  "i32", "u32", "i64",  "u64"};
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto t = static_cast<DataType>(i);
    EXPECT_STREQ(toString(t), kTypeNames[i]);
    EXPECT_EQ(parseDataType(toString(t)), t);
  }
  const char* kOpNames[kNumReduceOps] = {"sum", "prod", "min", "max", "avg"};
  for (int i = 0; i < kNumReduceOps; ++i) {
    auto op = static_cast<ReduceOp>(i);
    EXPECT_STREQ(toString(op), kOpNames[i]);
    EXPECT_EQ(parseReduceOp(toString(op)), op);
  }
  EXPECT_STREQ(toString(static_cast<DataType>(99)), "invalid");
  EXPECT_STREQ(toString(static_cast<ReduceOp>(99)), "invalid");
}

TEST(Types, ParsesNcclTestsNames) {
  EXPECT_EQ(parseDataType("float"), DataType::f32);
  EXPECT_EQ(parseDataType("double"), DataType::f64);
  EXPECT_EQ(parseDataType("half"), DataType::f16);
  EXPECT_EQ(parseDataType("bfloat16"), DataType::bf16);
  EXPECT_EQ(parseDataType("int8"), DataType::i8);
  EXPECT_EQ(parseDataType("char"), DataType::i8);
  EXPECT_EQ(parseDataType("uint8"), DataType::u8);
  EXPECT_EQ(parseDataType("int32"), DataType::i32);
  EXPECT_EQ(parseDataType("int"), DataType::i32);
  EXPECT_EQ(parseDataType("uint32"), DataType::u32);
  EXPECT_EQ(parseDataType("int64"), DataType::i64);
  EXPECT_EQ(parseDataType("uint64"), DataType::u64);
}

TEST(Types, RejectsUnknownNames) {
  for (const char* name : {"", "f8", "float32", "f32 ", " f32", "int16", "all", "F32"}) {
    EXPECT_FALSE(parseDataType(name).has_value()) << '"' << name << '"';
  }
  for (const char* name : {"", "all", "mul", "mean", "Sum", "sum ", "float"}) {
    EXPECT_FALSE(parseReduceOp(name).has_value()) << '"' << name << '"';
  }
  // A string_view that is not NUL-terminated at the name's end.
  std::string padded = "f32x";
  EXPECT_EQ(parseDataType(std::string_view(padded).substr(0, 3)), DataType::f32);
}

}  // namespace
}  // namespace coll
