//===- Mesh.cpp - the device mesh -----------------------------------------===//

#include "runtime/abi/Mesh.h"

namespace shardc::abi {

static bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool isAxisName(std::string_view s) {
  if (s.empty() || !(isAlpha(s[0]) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(isAlpha(c) || isDigit(c) || c == '_'))
      return false;
  return true;
}

bool withinDeviceLimit(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s <= 0 || s > kMaxDevices / n)
      return false;
    n *= s;
  }
  return true;
}

int64_t Mesh::numRanks() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

int Mesh::axisIndex(std::string_view name) const {
  for (int i = 0; i < numAxes(); ++i)
    if (names[i] == name)
      return i;
  return -1;
}

std::vector<int64_t> Mesh::coords(int64_t rank) const {
  std::vector<int64_t> c(sizes.size());
  for (int i = numAxes() - 1; i >= 0; --i) {
    c[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return c;
}

int64_t Mesh::linearRank(const std::vector<int64_t> &c) const {
  int64_t r = 0;
  for (int i = 0; i < numAxes(); ++i)
    r = r * sizes[i] + c.at(i);
  return r;
}

std::vector<int64_t> Mesh::groupOf(const std::vector<int> &axes, int64_t rank) const {
  std::vector<int64_t> base = coords(rank);
  int64_t n = size(axes);
  std::vector<int64_t> members(n);
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> c = base;
    int64_t rest = k;
    for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
      c[axes[i]] = rest % sizes[axes[i]];
      rest /= sizes[axes[i]];
    }
    members[k] = linearRank(c);
  }
  return members;
}

std::vector<int64_t> Mesh::localShape(const std::vector<int64_t> &globalShape,
                                      const std::vector<std::vector<int>> &sharding) const {
  std::vector<int64_t> local = globalShape;
  for (size_t d = 0; d < local.size() && d < sharding.size(); ++d)
    local[d] /= size(sharding[d]);
  return local;
}

std::vector<int64_t> Mesh::blockOffsets(const std::vector<int64_t> &globalShape,
                                        const std::vector<std::vector<int>> &sharding,
                                        int64_t rank) const {
  std::vector<int64_t> c = coords(rank), local = localShape(globalShape, sharding);
  std::vector<int64_t> off(local.size(), 0);
  for (size_t d = 0; d < off.size() && d < sharding.size(); ++d)
    off[d] = shardIndex(sharding[d], c) * local[d];
  return off;
}

std::string Mesh::axesNameOf(const std::vector<int> &axes) const {
  if (axes.empty())
    return "-";
  std::string s;
  for (int a : axes) {
    if (!s.empty())
      s += ",";
    // Callers pass verified axes; an out-of-range one still prints, never
    // reads past the mesh.
    s += a >= 0 && a < numAxes() ? names[a] : "<axis " + std::to_string(a) + ">";
  }
  return s;
}

std::string Mesh::str() const {
  std::string s;
  for (int i = 0; i < numAxes(); ++i)
    s += (i ? "," : "") + names[i] + "=" + std::to_string(sizes[i]);
  return s.empty() ? "(one rank)" : s;
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

std::optional<Mesh> Mesh::parse(std::string_view spec, std::string &error) {
  Mesh mesh;
  size_t start = 0;
  while (true) {
    size_t comma = spec.find(',', start);
    std::string_view part =
        trim(spec.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                                : comma - start));
    size_t eq = part.find('=');
    std::string_view name = trim(part.substr(0, eq));
    std::string_view size = eq == std::string_view::npos ? "" : trim(part.substr(eq + 1));
    int64_t n = 0;
    bool ok = isAxisName(name) && !size.empty() && size.size() <= 18;
    for (char c : size)
      ok = ok && isDigit(c);
    if (ok)
      n = std::stoll(std::string(size));
    if (!ok || n <= 0) {
      error = "bad mesh axis '" + std::string(part) +
              "': expected name=size with a positive size, as in dp=2,tp=4";
      return std::nullopt;
    }
    if (mesh.axisIndex(name) >= 0) {
      error = "mesh axis '" + std::string(name) + "' is named twice";
      return std::nullopt;
    }
    mesh.names.emplace_back(name);
    mesh.sizes.push_back(n);
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  if (mesh.names.size() > 8) {
    error = "a mesh has 1 to 8 axes, got '" + std::string(spec) + "'";
    return std::nullopt;
  }
  if (!withinDeviceLimit(mesh.sizes)) {
    error = "the mesh '" + std::string(spec) + "' has more than " + std::to_string(kMaxDevices) +
            " devices";
    return std::nullopt;
  }
  return mesh;
}

} // namespace shardc::abi
