//===- Error.h - runtime error type -----------------------------*- C++ -*-===//
//
// Every failure a user can cause (bad files, bad arguments, out-of-range token
// ids) is reported as shardc::rt::Error with a message that names the file or
// argument. Tools catch it, print it and exit non-zero.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_ERROR_H
#define SHARDC_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace shardc::rt {

/// A user-facing runtime error: what() is a complete, printable message.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_ERROR_H
