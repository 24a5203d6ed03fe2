// A small JSON value, writer and reader: enough for topologies and tuning files (objects keep
// their keys in insertion order so dumps are stable and diffable). Not a general-purpose
// library: numbers are doubles, strings are escaped but \u sequences outside ASCII are kept
// as they are written by dump(), which only emits ASCII escapes for control characters.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace coll {

class Json {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  Json() = default;
  Json(bool b) : kind_(Kind::boolean), bool_(b) {}
  Json(double d) : kind_(Kind::number), number_(d) {}
  Json(int i) : kind_(Kind::number), number_(i) {}
  Json(long i) : kind_(Kind::number), number_(static_cast<double>(i)) {}
  Json(unsigned long i) : kind_(Kind::number), number_(static_cast<double>(i)) {}
  Json(long long i) : kind_(Kind::number), number_(static_cast<double>(i)) {}
  Json(unsigned long long i) : kind_(Kind::number), number_(static_cast<double>(i)) {}
  Json(const char* s) : kind_(Kind::string), string_(s) {}
  Json(std::string s) : kind_(Kind::string), string_(std::move(s)) {}

  static Json array() { Json j; j.kind_ = Kind::array; return j; }
  static Json object() { Json j; j.kind_ = Kind::object; return j; }

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::null; }

  // Accessors return the fallback when the value has another kind (a missing or mistyped
  // field in a hand-edited file reads as its default; required fields are checked by callers).
  double number(double fallback = 0) const { return kind_ == Kind::number ? number_ : fallback; }
  bool boolean(bool fallback = false) const { return kind_ == Kind::boolean ? bool_ : fallback; }
  const std::string& string() const;
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

  // Object member by key (a null value when absent or not an object).
  const Json& operator[](const std::string& key) const;
  bool has(const std::string& key) const;

  Json& set(const std::string& key, Json value);  // objects; replaces an existing key
  Json& push(Json value);                         // arrays

  // indent < 0: one line; else pretty-printed with that many spaces per level.
  std::string dump(int indent = -1) const;
  // InvalidArgument naming the offset and what was expected.
  static Status parse(const std::string& text, Json* out);
  // Reads and parses a whole file. False: it cannot be opened; else *status says whether it
  // parsed (InvalidArgument prefixed with the path).
  static bool parseFile(const std::string& path, Json* out, Status* status);

 private:
  void dumpTo(std::string& out, int indent, int depth) const;

  Kind kind_ = Kind::null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace coll
