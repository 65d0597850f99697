#include "acceptance/numa.h"

#include <fmt/format.h>
#include <sched.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/strings.h"

namespace shoal::acceptance {

namespace {

Result<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return std::string(Trim(ss.str()));
}

bool IsHex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::string NormalizePciBusId(std::string_view id) {
  // domain:bus:device.function
  const std::vector<std::string_view> parts = Split(Trim(id), ':');
  if (parts.size() != 3) return "";
  const size_t dot = parts[2].find('.');
  if (dot == std::string_view::npos) return "";
  const std::string_view domain = parts[0], bus = parts[1];
  const std::string_view device = parts[2].substr(0, dot), function = parts[2].substr(dot + 1);
  if (!IsHex(domain) || !IsHex(bus) || !IsHex(device) || !IsHex(function) || domain.size() > 8 ||
      bus.size() > 2 || device.size() > 2 || function.size() != 1) {
    return "";
  }
  const unsigned long d = std::stoul(std::string(domain), nullptr, 16);
  if (d > 0xFFFF) return "";
  return fmt::format("{:04x}:{:02x}:{:02x}.{}", d, std::stoul(std::string(bus), nullptr, 16),
                     std::stoul(std::string(device), nullptr, 16), ToLower(function));
}

int ReadNumaNode(std::string_view pci_bus_id, const std::string& sysfs_root) {
  const std::string bus = NormalizePciBusId(pci_bus_id);
  if (bus.empty()) return -1;
  auto text = ReadSmallFile(fmt::format("{}/bus/pci/devices/{}/numa_node", sysfs_root, bus));
  if (!text.ok()) return -1;
  auto node = ParseInt(*text);
  return node.ok() && *node >= 0 ? static_cast<int>(*node) : -1;
}

Result<std::vector<int>> ReadNumaCpus(int numa_node, const std::string& sysfs_root) {
  if (numa_node < 0) return InvalidArgument("no NUMA node");
  SHOAL_ASSIGN_OR_RETURN(
      const std::string text,
      ReadSmallFile(fmt::format("{}/devices/system/node/node{}/cpulist", sysfs_root, numa_node)));
  auto cpus = ParseIntRanges(text);
  if (!cpus.ok())
    return cpus.status().WithContext(fmt::format("cpulist of NUMA node {}", numa_node));
  if (cpus->empty()) return NotFound(fmt::format("NUMA node {} has no CPUs", numa_node));
  return cpus;
}

Result<std::vector<int>> ThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return Internal(fmt::format("sched_getaffinity: {}", std::strerror(errno)));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

Status PinThreadToCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  if (CPU_COUNT(&set) == 0) return InvalidArgument("no CPUs to pin to");
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return Internal(fmt::format("sched_setaffinity: {}", std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace shoal::acceptance
