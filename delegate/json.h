// A minimal JSON writer for the delegate's reports and option table (the
// delegate library has no third-party dependency). Values are appended in
// order; the caller keeps the structure balanced.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace nacc::tflite {

class JsonWriter {
 public:
  JsonWriter& begin_object() { value_prefix(); out_ += '{'; first_ = true; return *this; }
  JsonWriter& end_object() { out_ += '}'; first_ = false; return *this; }
  JsonWriter& begin_array() { value_prefix(); out_ += '['; first_ = true; return *this; }
  JsonWriter& end_array() { out_ += ']'; first_ = false; return *this; }

  // Object member name; the next call writes its value.
  JsonWriter& key(const std::string& k) {
    if (!first_) out_ += ',';
    first_ = true;
    quote(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(const std::string& s) { value_prefix(); quote(s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(bool b) { value_prefix(); out_ += b ? "true" : "false"; return *this; }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(int64_t v) { value_prefix(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(uint64_t v) { value_prefix(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(double v) {
    value_prefix();
    if (!std::isfinite(v)) {
      out_ += "null";
    } else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      out_ += buf;
    }
    return *this;
  }
  // A value that is already JSON text (e.g. nacc::op_counters_json).
  JsonWriter& raw(const std::string& json) { value_prefix(); out_ += json; return *this; }
  JsonWriter& null() { value_prefix(); out_ += "null"; return *this; }
  template <typename T>
  JsonWriter& value(const std::vector<T>& items) {
    begin_array();
    for (const T& item : items) value(item);
    return end_array();
  }

  template <typename T>
  JsonWriter& field(const std::string& k, const T& v) { key(k); return value(v); }

  const std::string& str() const { return out_; }

 private:
  void value_prefix() {
    if (after_key_) {
      after_key_ = false;
      first_ = false;
      return;
    }
    if (!first_) out_ += ',';
    first_ = false;
  }
  void quote(const std::string& s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += static_cast<char>(c);
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace nacc::tflite
