#include "base/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/log.h"

namespace coll {

const std::string& Json::string() const {
  static const std::string empty;
  return kind_ == Kind::string ? string_ : empty;
}

const Json& Json::operator[](const std::string& key) const {
  static const Json null;
  for (const auto& [k, v] : members_)
    if (k == key) return v;
  return null;
}

bool Json::has(const std::string& key) const {
  for (const auto& m : members_)
    if (m.first == key) return true;
  return false;
}

Json& Json::set(const std::string& key, Json value) {
  kind_ = Kind::object;
  for (auto& m : members_)
    if (m.first == key) return m.second = std::move(value);
  members_.emplace_back(key, std::move(value));
  return members_.back().second;
}

Json& Json::push(Json value) {
  kind_ = Kind::array;
  items_.push_back(std::move(value));
  return items_.back();
}

namespace {

void quote(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += format("\\u%04x", c);
        else out += c;
    }
  }
  out += '"';
}

// Integers print as integers; other numbers with enough digits to read back the same double.
std::string numberText(double d) {
  if (!std::isfinite(d)) return "null";
  if (d == std::floor(d) && std::fabs(d) < 1e15) return format("%.0f", d);
  return format("%.17g", d);
}

void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

}  // namespace

void Json::dumpTo(std::string& out, int indent, int depth) const {
  switch (kind_) {
    case Kind::null: out += "null"; return;
    case Kind::boolean: out += bool_ ? "true" : "false"; return;
    case Kind::number: out += numberText(number_); return;
    case Kind::string: quote(out, string_); return;
    case Kind::array:
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        items_[i].dumpTo(out, indent, depth + 1);
      }
      if (!items_.empty()) newline(out, indent, depth);
      out += ']';
      return;
    case Kind::object:
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        quote(out, members_[i].first);
        out += indent < 0 ? ":" : ": ";
        members_[i].second.dumpTo(out, indent, depth + 1);
      }
      if (!members_.empty()) newline(out, indent, depth);
      out += '}';
      return;
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dumpTo(out, indent, 0);
  return out;
}

namespace {

// Recursive descent over the text; depth-limited so a hostile file cannot blow the stack.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Status parseDocument(Json* out) {
    COLL_RETURN_IF_ERROR(value(out, 0));
    skipSpace();
    if (pos_ != s_.size()) return error("end of input");
    return Status::ok();
  }

 private:
  Status error(const char* expected) const {
    return invalidArgument(format("JSON: expected %s at offset %zu", expected, pos_));
  }
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Status value(Json* out, int depth) {
    if (depth > 64) return error("nesting of at most 64 levels");
    skipSpace();
    if (pos_ >= s_.size()) return error("a value");
    char c = s_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      std::string str;
      COLL_RETURN_IF_ERROR(string(&str));
      *out = Json(std::move(str));
      return Status::ok();
    }
    if (consume("true")) { *out = Json(true); return Status::ok(); }
    if (consume("false")) { *out = Json(false); return Status::ok(); }
    if (consume("null")) { *out = Json(); return Status::ok(); }
    return number(out);
  }

  Status number(Json* out) {
    const char* begin = s_.c_str() + pos_;
    char* end = nullptr;
    double d = std::strtod(begin, &end);
    if (end == begin) return error("a value");
    pos_ += static_cast<size_t>(end - begin);
    *out = Json(d);
    return Status::ok();
  }

  Status string(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') { *out += c; continue; }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case 'n': *out += '\n'; break;
        case 't': *out += '\t'; break;
        case 'r': *out += '\r'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return error("4 hex digits");
          long code = std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16);
          pos_ += 4;
          *out += code < 0x80 ? static_cast<char>(code) : '?';  // our files are ASCII
          break;
        }
        default: *out += e;  // \" \\ \/
      }
    }
    if (pos_ >= s_.size()) return error("a closing quote");
    ++pos_;
    return Status::ok();
  }

  Status array(Json* out, int depth) {
    ++pos_;
    *out = Json::array();
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return Status::ok(); }
    for (;;) {
      Json item;
      COLL_RETURN_IF_ERROR(value(&item, depth + 1));
      out->push(std::move(item));
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return Status::ok(); }
      return error("',' or ']'");
    }
  }

  Status object(Json* out, int depth) {
    ++pos_;
    *out = Json::object();
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return Status::ok(); }
    for (;;) {
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return error("a key string");
      std::string key;
      COLL_RETURN_IF_ERROR(string(&key));
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return error("':'");
      ++pos_;
      Json member;
      COLL_RETURN_IF_ERROR(value(&member, depth + 1));
      out->set(key, std::move(member));
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return Status::ok(); }
      return error("',' or '}'");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

bool Json::parseFile(const std::string& path, Json* out, Status* status) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  *status = parse(text.str(), out);
  if (!*status) *status = invalidArgument(path + ": " + status->message());
  return true;
}

Status Json::parse(const std::string& text, Json* out) {
  return Parser(text).parseDocument(out);
}

}  // namespace coll
