// The control side of the fake libnvidia-ml.so.1 built by the test suite.
//
// The fake implements every NVML function that src/agent/gpu/nvml_api.h
// declares, over the state below. A test dlopens the fake by the same path
// as the provider does (the loader then hands both the same copy), looks up
// fake_nvml_state and fake_nvml_reset with dlsym, and edits the state before
// and between the provider's calls. Not thread-safe: one test thread.
//
// Variants, each a libnvidia-ml.so.1 in its own folder:
//   fake_nvml         every function;
//   fake_nvml_old     without the optional functions an older driver lacks
//                     (clocks event reasons, NUMA node id, MIG mode, total
//                     energy, nvmlEventSetWait_v2, remapped rows, field values,
//                     the MIG calls);
//   fake_nvml_broken  without nvmlDeviceGetUUID, which every driver has.
#pragma once

extern "C" {

#define FAKE_NVML_MAX_GPUS 16
#define FAKE_NVML_MAX_LINKS 18
#define FAKE_NVML_MAX_EVENTS 64
// nvlink[] values besides a peer GPU's index.
#define FAKE_NVML_NO_LINK (-1)
#define FAKE_NVML_NVSWITCH (-2)

// One GPU instance of a GPU in MIG mode, with its one compute instance
// (a MIG device; handles of all three kinds point here).
#define FAKE_NVML_MAX_MIG 7
struct FakeNvmlMig {
  int used;         // the slot holds an instance
  int has_ci;       // its compute instance exists
  unsigned int gi;  // GPU instance id (1, 2, ... in order of creation)
  unsigned int slices;
  unsigned long long memory_mib;
  unsigned long long used_mib;
  unsigned int util_pct;  // 0: NVML_ERROR_NOT_SUPPORTED, as most drivers answer for MIG
  char uuid[96];
};

struct FakeNvmlGpu {
  char name[96];
  char uuid[96];
  unsigned int pci_domain;
  unsigned int pci_bus;
  unsigned int pci_device;
  unsigned long long memory_total_bytes;
  unsigned long long memory_used_bytes;
  unsigned int util_gpu_pct;
  unsigned int util_memory_pct;
  unsigned int temperature_c;
  unsigned int slowdown_c;
  unsigned int power_mw;
  unsigned int power_limit_mw;  // enforced; nvmlDeviceSetPowerManagementLimit changes it
  unsigned int power_min_mw;    // nvmlDeviceGetPowerManagementLimitConstraints
  unsigned int power_max_mw;
  unsigned int power_default_mw;
  unsigned long long energy_mj;
  unsigned int sm_clock_mhz;
  int ecc_supported;  // 0: ECC counters answer NVML_ERROR_NOT_SUPPORTED
  unsigned long long ecc_corrected;
  unsigned long long ecc_uncorrected;
  unsigned long long clock_event_reasons;
  unsigned int links;               // NVLinks the GPU has; 0: NVML_ERROR_NOT_SUPPORTED
  int nvlink[FAKE_NVML_MAX_LINKS];  // a peer GPU index, FAKE_NVML_NVSWITCH or FAKE_NVML_NO_LINK
  unsigned int mig_mode;            // NVML_DEVICE_MIG_DISABLE / _ENABLE
  int mig_capable;                  // 1 after a reset (an H100): the MIG calls answer
  int mig_needs_reset;              // nvmlDeviceSetMigMode leaves the new mode pending
  unsigned int mig_next_gi;         // the next GPU instance id
  struct FakeNvmlMig mig[FAKE_NVML_MAX_MIG];
  int persistence_mode;  // 1 (on) after a reset; 0: off
  int numa_node;         // -1: nvmlDeviceGetNumaNodeId answers NOT_SUPPORTED
  int lost;              // every call answers NVML_ERROR_GPU_IS_LOST
  // dcgm-exporter's other default counters (api::GpuCounters).
  unsigned int mem_clock_mhz;
  unsigned int memory_temp_c;  // field NVML_FI_DEV_MEMORY_TEMP
  unsigned int pcie_replays;
  unsigned int enc_util_pct;
  unsigned int dec_util_pct;
  unsigned long long nvlink_tx_kib;  // fields NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, all links
  unsigned long long nvlink_rx_kib;
  unsigned int remapped_correctable;
  unsigned int remapped_uncorrectable;
  unsigned int remap_failure;
};

struct FakeNvmlXid {
  unsigned int gpu;
  unsigned long long xid;
};

struct FakeNvmlState {
  int init_result;    // what nvmlInit_v2 returns (an nvmlReturn_t)
  int optional_fail;  // non-zero: every optional query answers this code
  unsigned int device_count;
  char driver_version[80];  // nvmlSystemGetDriverVersion
  struct FakeNvmlGpu gpus[FAKE_NVML_MAX_GPUS];
  // XID events not yet taken by nvmlEventSetWait_v2, oldest first.
  unsigned int xid_count;
  struct FakeNvmlXid xids[FAKE_NVML_MAX_EVENTS];
  // Bookkeeping the tests check.
  int init_depth;       // nvmlInit_v2 calls minus nvmlShutdown calls
  int event_sets_open;  // created minus freed
  // The fake stands for libcuda too: what cuDriverGetVersion answers
  // (1000 * major + 10 * minor; 12040 after a reset).
  int cuda_driver_version;
};

// The state the fake's functions read and write.
struct FakeNvmlState* fake_nvml_state(void);
// Back to 8 "NVIDIA H100 80GB HBM3" GPUs, every link to NVSwitch, as on a
// DGX H100; clears the call counts.
void fake_nvml_reset(void);
// How often an NVML function has been called since the last reset.
unsigned int fake_nvml_calls(const char* function);
// Counts a call (the fake's MIG functions, in their own file, use it too).
void fake_nvml_count(const char* function);

typedef struct FakeNvmlState* (*FakeNvmlStateFn)(void);
typedef void (*FakeNvmlResetFn)(void);
typedef unsigned int (*FakeNvmlCallsFn)(const char*);

}  // extern "C"
