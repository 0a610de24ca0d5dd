//===- Args.cpp - command-line parsing for the shardc driver --------------===//

#include "tools/shardc/Args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>

using namespace shardc::tools;

Args &Args::option(const std::string &name, const std::string &meta, const std::string &help,
                   std::optional<std::string> defaultValue) {
  order_.push_back(name);
  decls_[name] = Decl{meta, help, false, std::move(defaultValue)};
  return *this;
}

Args &Args::flag(const std::string &name, const std::string &help) {
  order_.push_back(name);
  decls_[name] = Decl{"", help, true, std::nullopt};
  return *this;
}

bool Args::parse(const std::vector<std::string> &argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << help();
      return false;
    }
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(a[1] == '-' ? 2 : 1), value;
    bool inlineValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inlineValue = true;
    }
    auto it = decls_.find(name);
    if (it == decls_.end())
      throw UsageError{"unknown option '" + a + "' for 'shardc " + command_ + "'"};
    if (it->second.isFlag) {
      if (inlineValue)
        throw UsageError{"option '--" + name + "' takes no value"};
      flags_[name] = true;
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argv.size())
        throw UsageError{"option '--" + name + "' expects a value (" + it->second.meta + ")"};
      value = argv[++i];
    }
    values_[name] = value;
  }
  return true;
}

bool Args::has(const std::string &name) const {
  return values_.count(name) || (decls_.count(name) && decls_.at(name).defaultValue);
}

std::string Args::str(const std::string &name) const {
  if (auto it = values_.find(name); it != values_.end())
    return it->second;
  if (auto it = decls_.find(name); it != decls_.end() && it->second.defaultValue)
    return *it->second.defaultValue;
  throw UsageError{"missing required option '--" + name + "'"};
}

int64_t Args::integer(const std::string &name, int64_t min) const {
  std::string s = str(name);
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError{"option '--" + name + "' expects an integer, got '" + s + "'"};
  if (v < min)
    throw UsageError{"option '--" + name + "' must be at least " + std::to_string(min) +
                     ", got " + s};
  return v;
}

uint64_t Args::unsignedInteger(const std::string &name) const {
  std::string s = str(name);
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno == ERANGE)
    throw UsageError{"option '--" + name + "' expects a non-negative integer, got '" + s + "'"};
  return v;
}

double Args::real(const std::string &name) const {
  std::string s = str(name);
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw UsageError{"option '--" + name + "' expects a number, got '" + s + "'"};
  return v;
}

std::string Args::help() const {
  std::string out = "usage: shardc " + command_ + " " + synopsis_ + "\n\n" + description_ +
                    "\n\noptions:\n";
  for (const std::string &name : order_) {
    const Decl &d = decls_.at(name);
    std::string left = "  --" + name + (d.isFlag ? "" : " <" + d.meta + ">");
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    out += left + d.help;
    if (d.defaultValue)
      out += " (default: " + *d.defaultValue + ")";
    out += "\n";
  }
  out += "  --help                    this text\n";
  return out;
}
