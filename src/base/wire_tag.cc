#include "base/wire_tag.h"

#include <vector>

#include "base/fnv1a.h"
#include "base/log.h"
#include "coll/types.h"

namespace coll {
namespace {

constexpr int kTypeShift = 8, kOpShift = 12, kCheckShift = 16, kSequenceShift = 32;

struct Fields {
  uint8_t kind;
  int type, op;  // -1: none
  uint16_t check;
  uint32_t sequence;
};

Fields fieldsOf(uint64_t tag) {
  return {static_cast<uint8_t>(tag & 0xff), static_cast<int>((tag >> kTypeShift) & 0xf) - 1,
          static_cast<int>((tag >> kOpShift) & 0x7) - 1, static_cast<uint16_t>(tag >> kCheckShift),
          static_cast<uint32_t>(tag >> kSequenceShift)};
}

// Sums, not a hash, where neighbours must differ: counts or roots one apart (an off-by-one)
// always give different checks; the algorithm's name is hashed.
uint16_t callCheck(const WireCall& c) {
  const uint64_t count = c.count + (c.count >> 16) + (c.count >> 32) + (c.count >> 48);
  const uint64_t root = static_cast<uint64_t>(static_cast<int64_t>(c.root) + 1) * 0x9E37;  // odd: a step never wraps to 0
  const uint64_t h = fnv1a(c.algorithm);  // stable across builds and machines: ranks compare it
  return static_cast<uint16_t>(count + root + (h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48)));
}

std::string kindName(uint8_t kind) {
  if (kind >= 1 && kind <= kLastOpKind) return toString(static_cast<OpKind>(kind));
  return format("internal message kind %#x", kind);
}

}  // namespace

uint64_t wireTag(uint64_t sequence, uint8_t kind) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(sequence)) << kSequenceShift) | kind;
}

uint64_t wireTag(uint64_t sequence, const WireCall& c) {
  uint64_t tag = wireTag(sequence, static_cast<uint8_t>(c.kind));
  if (c.type >= 0) tag |= static_cast<uint64_t>(c.type + 1) << kTypeShift;
  if (c.op >= 0) tag |= static_cast<uint64_t>(c.op + 1) << kOpShift;
  return tag | static_cast<uint64_t>(callCheck(c)) << kCheckShift;
}

std::string describeWireTag(uint64_t tag) {
  Fields f = fieldsOf(tag);
  std::string s = kindName(f.kind);
  if (f.type >= 0) {
    s += format("(%s", toString(static_cast<DataType>(f.type)));
    if (f.op >= 0) s += format(", %s", toString(static_cast<ReduceOp>(f.op)));
    s += ")";
  }
  return s + format(" call %u", f.sequence);
}

bool carriesCall(uint64_t tag) {
  const uint8_t kind = tag & 0xff;
  return kind >= 1 && kind <= kLastOpKind && !isPointToPoint(static_cast<OpKind>(kind)) &&
         static_cast<OpKind>(kind) != OpKind::group;
}

int32_t callDistance(uint64_t sent_tag, uint64_t expected_tag) {
  return static_cast<int32_t>(fieldsOf(sent_tag).sequence - fieldsOf(expected_tag).sequence);
}

namespace {

std::string whatDiffers(uint64_t sent_tag, uint64_t expected_tag) {
  Fields s = fieldsOf(sent_tag), e = fieldsOf(expected_tag);
  std::vector<std::string> why;
  if (s.kind != e.kind) {
    why.push_back("the collectives differ");  // what else differs follows from it
  } else {
    if (s.type != e.type) why.push_back("the data types differ");
    if (s.op != e.op) why.push_back("the reduction ops differ");
    if (s.check != e.check) why.push_back("the counts, roots or algorithms differ");
  }
  const auto ahead = static_cast<int32_t>(s.sequence - e.sequence);
  if (ahead < 0) why.push_back("the peer's message is of an earlier call, which left it unreceived (its ranks disagreed: "
                               "about its root, say)");
  if (ahead > 0) why.push_back("the peer is at a later call (this one was issued on some ranks only)");
  if (why.empty()) why.push_back("the lengths differ (the ranks' counts differ)");
  std::string because;
  for (size_t i = 0; i < why.size(); ++i) because += (i ? "; " : "") + why[i];
  return because;
}

}  // namespace

Status messageMismatch(int peer, uint64_t sent_tag, uint64_t sent_bytes, uint64_t expected_tag,
                       uint64_t expected_bytes) {
  return mismatchError(format("peer %d sent a message of %s, %llu bytes, where this rank's %s expected %llu bytes: %s",
                              peer, describeWireTag(sent_tag).c_str(), static_cast<unsigned long long>(sent_bytes),
                              describeWireTag(expected_tag).c_str(), static_cast<unsigned long long>(expected_bytes),
                              whatDiffers(sent_tag, expected_tag).c_str()),
                       peer);
}

Status unexpectedMessage(int peer, uint64_t sent_tag, uint64_t sent_bytes, uint64_t expected_tag) {
  return mismatchError(format("peer %d sent a message of %s, %llu bytes, which this rank's %s has no receive for: %s",
                              peer, describeWireTag(sent_tag).c_str(), static_cast<unsigned long long>(sent_bytes),
                              describeWireTag(expected_tag).c_str(), whatDiffers(sent_tag, expected_tag).c_str()),
                       peer);
}

}  // namespace coll
