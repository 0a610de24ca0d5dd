//===- Args.h - command-line parsing for the shardc driver ------*- C++ -*-===//
//
// A small parser shared by every subcommand so flags look and fail the same
// way: `--name value` or `--name=value`, typed values checked with a message
// that names the flag, `--help` generated from the declarations.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_ARGS_H
#define SHARDC_TOOLS_SHARDC_ARGS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardc::tools {

/// Thrown for bad command lines; main prints it with a hint to use --help.
struct UsageError {
  std::string message;
};

class Args {
public:
  Args(std::string command, std::string synopsis, std::string description)
      : command_(std::move(command)), synopsis_(std::move(synopsis)),
        description_(std::move(description)) {}

  /// Declares a flag taking a value (`meta` names it in --help).
  Args &option(const std::string &name, const std::string &meta, const std::string &help,
               std::optional<std::string> defaultValue = std::nullopt);
  /// Declares a boolean flag.
  Args &flag(const std::string &name, const std::string &help);

  /// Parses argv (after the subcommand). Returns false if --help was printed.
  bool parse(const std::vector<std::string> &argv);

  bool has(const std::string &name) const;
  std::string str(const std::string &name) const;
  int64_t integer(const std::string &name, int64_t min = INT64_MIN) const;
  uint64_t unsignedInteger(const std::string &name) const;
  double real(const std::string &name) const;
  bool isSet(const std::string &name) const { return flags_.count(name) && flags_.at(name); }
  const std::vector<std::string> &positional() const { return positional_; }

  std::string help() const;

private:
  struct Decl {
    std::string meta, help;
    bool isFlag = false;
    std::optional<std::string> defaultValue;
  };
  std::string command_, synopsis_, description_;
  std::vector<std::string> order_;
  std::map<std::string, Decl> decls_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> flags_;
  std::vector<std::string> positional_;
};

} // namespace shardc::tools

#endif // SHARDC_TOOLS_SHARDC_ARGS_H
