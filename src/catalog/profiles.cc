#include "catalog/profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "catalog/gpus.h"
#include "core/hash.h"

namespace shoal::catalog {

namespace {

constexpr int64_t kGib = 1024;                  // MiB per GiB
constexpr int64_t kTib = int64_t{1024} * 1024;  // MiB per TiB

// GPU memory sizes are given by vendors in "GB" that are in fact GiB-sized
// HBM stacks (an 80 GB H100 reports 81559 MiB usable); we store the nominal
// figure in GiB so that "80GB" in a model name and the MiB figure agree.
const std::vector<NodeProfile>& Table() {
  static const std::vector<NodeProfile> table = {
      {
          .name = "dgx-h100",
          .gpu_model = "H100-SXM-80GB",
          .gpus = 8,
          .gpu_memory_mib = 80 * kGib,
          .nvlink_island_size = 8,
          .numa_nodes = 2,
          .cpu_milli = 224'000,
          .memory_mib = 2 * kTib,
          .gpu_tdp_w = 700,
          .source =
              "NVIDIA DGX H100 datasheet and user guide: 8x H100 SXM5 80GB on 4 NVSwitch chips "
              "(one NVLink domain), 2x Intel Xeon Platinum 8480C (2 sockets, 112 cores, 224 "
              "threads), 2 TB DDR5; H100 SXM5 datasheet: up to 700 W per GPU",
      },
      {
          .name = "hgx-h200",
          .gpu_model = "H200-SXM-141GB",
          .gpus = 8,
          .gpu_memory_mib = 141 * kGib,
          .nvlink_island_size = 8,
          .numa_nodes = 2,
          .cpu_milli = 224'000,
          .memory_mib = 2 * kTib,
          .gpu_tdp_w = 700,
          .source =
              "NVIDIA H200 datasheet / HGX H200 8-GPU board: 8x H200 SXM 141GB HBM3e behind "
              "NVSwitch (one NVLink domain), up to 700 W per GPU. The host is not part of HGX: "
              "CPU and memory are the typical configuration of the DGX H200 (2x Xeon Platinum "
              "8480C, 224 threads, 2 TB)",
      },
      {
          .name = "dgx-a100",
          .gpu_model = "A100-SXM4-80GB",
          .gpus = 8,
          .gpu_memory_mib = 80 * kGib,
          .nvlink_island_size = 8,
          .numa_nodes = 2,
          .cpu_milli = 256'000,
          .memory_mib = 2 * kTib,
          .gpu_tdp_w = 400,
          .source =
              "NVIDIA DGX A100 datasheet and user guide (640GB model): 8x A100 SXM4 80GB on 6 "
              "NVSwitch chips (one NVLink domain), 2x AMD EPYC 7742 (128 cores, 256 threads), "
              "2 TB memory; A100 SXM4 TDP 400 W. NUMA: 2 sockets as shipped (NPS1); sites that "
              "set NPS4 see 8 NUMA nodes",
      },
      {
          .name = "dgx-b200",
          .gpu_model = "B200-SXM-180GB",
          .gpus = 8,
          .gpu_memory_mib = 180 * kGib,
          .nvlink_island_size = 8,
          .numa_nodes = 2,
          .cpu_milli = 224'000,
          .memory_mib = 2 * kTib,
          .gpu_tdp_w = 1000,
          .source =
              "NVIDIA DGX B200 datasheet: 8x B200 with 1,440 GB total GPU memory (180 GB each) "
              "on 2 NVLink 5 switch chips (one NVLink domain), 2x Intel Xeon Platinum 8570 "
              "(112 cores, 224 threads), 2 TB memory (up to 4 TB). Per-GPU power of 1,000 W is "
              "the typical DGX B200 setting, not a datasheet line",
      },
      {
          .name = "pcie-l40s-4",
          .gpu_model = "L40S-48GB",
          .gpus = 4,
          .gpu_memory_mib = 48 * kGib,
          .nvlink_island_size = 1,
          .numa_nodes = 2,
          .cpu_milli = 128'000,
          .memory_mib = 1 * kTib,
          .gpu_tdp_w = 350,
          .source =
              "NVIDIA L40S product brief: 48 GB GDDR6, PCIe Gen4 x16, no NVLink, 350 W. The 4-GPU "
              "2-socket host (128 threads, 1 TB) is a typical OEM configuration, not a datasheet",
      },
      {
          .name = "pcie-a100-4",
          .gpu_model = "A100-PCIE-80GB",
          .gpus = 4,
          .gpu_memory_mib = 80 * kGib,
          .nvlink_island_size = 1,
          .numa_nodes = 2,
          .cpu_milli = 128'000,
          .memory_mib = 1 * kTib,
          .gpu_tdp_w = 300,
          .source =
              "NVIDIA A100 PCIe 80GB datasheet: 80 GB HBM2e, 300 W; NVLink bridges join pairs only "
              "and are optional, so GPUs are modelled as PCIe only. The 4-GPU 2-socket host "
              "(128 threads, 1 TB) is a typical OEM configuration",
      },
      {
          .name = "v100-8",
          .gpu_model = "V100-SXM2-32GB",
          .gpus = 8,
          .gpu_memory_mib = 32 * kGib,
          // The DGX-1 hybrid cube-mesh is not all-to-all: each GPU is NVLinked
          // to the three others of its quad and to one GPU of the other quad,
          // so only a quad has the direct links a collective relies on.
          .nvlink_island_size = 4,
          .numa_nodes = 2,
          .cpu_milli = 80'000,
          .memory_mib = 512 * kGib,
          .gpu_tdp_w = 300,
          .source =
              "NVIDIA DGX-1 with Tesla V100 datasheet: 8x V100 SXM2 32GB in an NVLink hybrid "
              "cube-mesh (modelled as 2 islands of 4: each quad is fully connected, the quads "
              "only through single links), 2x Intel Xeon E5-2698 v4 (40 cores, 80 threads), "
              "512 GB; V100 SXM2 300 W",
      },
      {
          .name = "t4-2",
          .gpu_model = "T4-16GB",
          .gpus = 2,
          .gpu_memory_mib = 16 * kGib,
          .nvlink_island_size = 1,
          .numa_nodes = 1,
          .cpu_milli = 64'000,
          .memory_mib = 256 * kGib,
          .gpu_tdp_w = 70,
          .source = "NVIDIA T4 product brief: 16 GB GDDR6, PCIe Gen3 x16, 70 W. The 1-socket host "
                    "(64 threads, 256 GB) is a typical inference-server configuration",
      },
      {
          .name = "a10-1",
          .gpu_model = "A10-24GB",
          .gpus = 1,
          .gpu_memory_mib = 24 * kGib,
          .nvlink_island_size = 1,
          .numa_nodes = 1,
          .cpu_milli = 32'000,
          .memory_mib = 128 * kGib,
          .gpu_tdp_w = 150,
          .source =
              "NVIDIA A10 product brief: 24 GB GDDR6, PCIe Gen4, 150 W. The host (32 threads, "
              "128 GB) is a typical cloud single-GPU instance, not a datasheet",
      },
  };
  return table;
}

}  // namespace

const std::vector<NodeProfile>& Profiles() {
  return Table();
}

const NodeProfile* FindProfile(std::string_view name) {
  for (const NodeProfile& p : Table()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> ProfileNames() {
  std::vector<std::string> names;
  for (const NodeProfile& p : Table())
    names.emplace_back(p.name);
  return names;
}

std::string DerivedUuid(std::string_view prefix, std::string_view key) {
  uint64_t hi = Fnv1a(key);
  uint64_t lo = Fnv1a(key, hi ^ 0x9e3779b97f4a7c15ULL);
  return fmt::format("{}-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", prefix, hi >> 32,
                     (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

Node MakeNode(const NodeProfile& profile, std::string name) {
  Node node;
  node.name = std::move(name);
  node.cpu_milli = profile.cpu_milli;
  node.memory_mib = profile.memory_mib;
  // Zero or a too-large island size means one island spanning the node.
  int island =
      profile.nvlink_island_size > 0 ? profile.nvlink_island_size : std::max(profile.gpus, 1);
  int numa = std::max(profile.numa_nodes, 1);
  // The catalogue's TDP for the model (a cluster file may name another model than the profile's).
  const GpuSpec* spec = FindGpu(profile.gpu_model);
  const double rated_w = spec != nullptr ? spec->tdp_w : profile.gpu_tdp_w;
  node.gpus.reserve(static_cast<size_t>(std::max(profile.gpus, 0)));
  for (int i = 0; i < profile.gpus; ++i) {
    Gpu gpu;
    gpu.index = i;
    gpu.uuid = DerivedUuid("GPU", fmt::format("{}#{}", node.name, i));
    gpu.model = std::string(profile.gpu_model);
    gpu.memory_mib = profile.gpu_memory_mib;
    gpu.nvlink_island = i / island;
    gpu.rated_w = rated_w;
    // GPUs are split into equal consecutive blocks, one per NUMA node, as
    // vendors wire them (GPUs 0-3 on socket 0 of a DGX).
    gpu.numa_node = static_cast<int>(static_cast<int64_t>(i) * numa / profile.gpus);
    node.gpus.push_back(std::move(gpu));
  }
  return node;
}

}  // namespace shoal::catalog
