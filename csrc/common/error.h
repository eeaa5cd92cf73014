// Project exception types. Every C++ error that can reach a caller is one of
// these; the pybind11 bindings translate them to Python exceptions
// (InvalidArgument -> ValueError, the others -> nacc.NaccError subclasses).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace nacc {

// Base class of every nacc error.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// An argument out of range or of the wrong shape (a caller's mistake).
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(what) {}
};

// Something the hardware or the project does not implement.
class Unsupported : public Error {
 public:
  explicit Unsupported(const std::string& what) : Error(what) {}
};

// A fault raised by the simulated device (bus error, bad command, ...).
class DeviceFault : public Error {
 public:
  explicit DeviceFault(const std::string& what) : Error(what) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

// Concatenates its arguments with operator<< into one message.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

// Throws InvalidArgument with the concatenated message when `ok` is false.
template <typename... Args>
void check_arg(bool ok, const Args&... args) {
  if (!ok) throw InvalidArgument(str_cat(args...));
}

}  // namespace nacc
