// Where a GPU sits among the host's NUMA nodes, and pinning a thread next to
// it, so that host<->device copies measure the GPU's link and not the
// inter-socket one. Reads sysfs directly (no libnuma): the PCI device's
// numa_node and the node's cpulist. Pinned host memory that a pinned thread
// allocates lands on that thread's node (Linux's default first-touch policy).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::acceptance {

// "00000000:19:00.0" (NVML's 8-digit domain) or "0000:19:00.0" (CUDA's) ->
// "0000:19:00.0", lower-case, as /sys/bus/pci/devices names it; "" when the
// text is not a PCI address.
std::string NormalizePciBusId(std::string_view id);

// The NUMA node of a PCI device; -1 when unknown or the host has one node.
int ReadNumaNode(std::string_view pci_bus_id, const std::string& sysfs_root = "/sys");

// The CPUs of a NUMA node, from <sysfs>/devices/system/node/node<N>/cpulist.
Result<std::vector<int>> ReadNumaCpus(int numa_node, const std::string& sysfs_root = "/sys");

// The calling thread's CPU affinity, and setting it.
Result<std::vector<int>> ThreadCpus();
Status PinThreadToCpus(const std::vector<int>& cpus);

}  // namespace shoal::acceptance
