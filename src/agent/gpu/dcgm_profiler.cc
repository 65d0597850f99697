#include "agent/gpu/dcgm_profiler.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <optional>

// DCGM's C API as documented in dcgm_agent.h and dcgm_structs.h (DCGM 3 and
// 4 share it): only what the profiler calls.
// NOLINTBEGIN
extern "C" {
typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;
typedef int dcgmReturn_t;  // DCGM_ST_OK is 0
#define DCGM_ST_OK 0
#define DCGM_OPERATION_MODE_AUTO 1
#define DCGM_GROUP_ALL_GPUS 0x7fffffff
#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096
#define DCGM_FT_DOUBLE 'd'
#define DCGM_FT_INT64 'i'
// Values DCGM returns for "not measured".
#define DCGM_FP64_BLANK 140737488355328.0
#define DCGM_INT64_BLANK 0x7ffffffffffffff0LL

typedef struct {
  unsigned int version;  // dcgmFieldValue_version1
  unsigned short fieldId;
  unsigned short fieldType;  // DCGM_FT_*
  int status;                // DCGM_ST_OK, or why this value is missing
  int64_t ts;                // microseconds since 1970
  union {
    int64_t i64;
    double dbl;
    char str[DCGM_MAX_STR_LENGTH];
    char blob[DCGM_MAX_BLOB_LENGTH];
  } value;
} dcgmFieldValue_v1;
#define dcgmFieldValue_version1 ((unsigned int)(sizeof(dcgmFieldValue_v1) | (1UL << 24U)))

dcgmReturn_t dcgmInit(void);
dcgmReturn_t dcgmShutdown(void);
dcgmReturn_t dcgmStartEmbedded(int opMode, dcgmHandle_t* pDcgmHandle);
dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle);
dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t pDcgmHandle, int numFieldIds,
                                  unsigned short* fieldIds, const char* fieldGroupName,
                                  dcgmFieldGrp_t* dcgmFieldGroupId);
dcgmReturn_t dcgmWatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                             dcgmFieldGrp_t fieldGroupId, long long updateFreq, double maxKeepAge,
                             int maxKeepSamples);
dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t pDcgmHandle, int gpuId,
                                          unsigned short fields[], unsigned int count,
                                          dcgmFieldValue_v1 values[]);
const char* errorString(dcgmReturn_t result);
}  // extern "C"
// NOLINTEND

namespace shoal::agent {

namespace {

// The profiling fields served (dcgm_fields.h), and where each goes.
struct ProfField {
  unsigned short id;
  std::optional<double> api::GpuCounters::*into;
};
constexpr ProfField kFields[] = {
    {1001, &api::GpuCounters::prof_gr_engine_active},  // DCGM_FI_PROF_GR_ENGINE_ACTIVE
    {1002, &api::GpuCounters::prof_sm_active},         // DCGM_FI_PROF_SM_ACTIVE
    {1003, &api::GpuCounters::prof_sm_occupancy},      // DCGM_FI_PROF_SM_OCCUPANCY
    {1004, &api::GpuCounters::prof_tensor_active},     // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
    {1005, &api::GpuCounters::prof_dram_active},       // DCGM_FI_PROF_DRAM_ACTIVE
    {1009, &api::GpuCounters::prof_pcie_tx_bytes},     // DCGM_FI_PROF_PCIE_TX_BYTES
    {1010, &api::GpuCounters::prof_pcie_rx_bytes},     // DCGM_FI_PROF_PCIE_RX_BYTES
};
constexpr unsigned int kFieldCount = std::size(kFields);

struct DcgmApi {
  decltype(&::dcgmInit) dcgmInit = nullptr;
  decltype(&::dcgmShutdown) dcgmShutdown = nullptr;
  decltype(&::dcgmStartEmbedded) dcgmStartEmbedded = nullptr;
  decltype(&::dcgmStopEmbedded) dcgmStopEmbedded = nullptr;
  decltype(&::dcgmFieldGroupCreate) dcgmFieldGroupCreate = nullptr;
  decltype(&::dcgmWatchFields) dcgmWatchFields = nullptr;
  decltype(&::dcgmGetLatestValuesForFields) dcgmGetLatestValuesForFields = nullptr;
  decltype(&::errorString) errorString = nullptr;
};

// A value, unless DCGM says it has none.
std::optional<double> ValueOf(const dcgmFieldValue_v1& v) {
  if (v.status != DCGM_ST_OK) return std::nullopt;
  if (v.fieldType == DCGM_FT_DOUBLE) {
    if (v.value.dbl >= DCGM_FP64_BLANK) return std::nullopt;
    return v.value.dbl;
  }
  if (v.fieldType == DCGM_FT_INT64) {
    if (v.value.i64 >= DCGM_INT64_BLANK) return std::nullopt;
    return static_cast<double>(v.value.i64);
  }
  return std::nullopt;
}

class LibDcgmProfiler final : public DcgmProfiler {
 public:
  LibDcgmProfiler(void* library, DcgmApi api, dcgmHandle_t handle)
      : library_(library), api_(api), handle_(handle) {}
  ~LibDcgmProfiler() override {
    api_.dcgmStopEmbedded(handle_);
    api_.dcgmShutdown();
    dlclose(library_);
  }

  void Read(std::vector<api::GpuCounters*>& counters) override {
    unsigned short ids[kFieldCount];
    for (unsigned int f = 0; f < kFieldCount; ++f)
      ids[f] = kFields[f].id;
    dcgmFieldValue_v1 values[kFieldCount];
    for (size_t gpu = 0; gpu < counters.size(); ++gpu) {
      for (dcgmFieldValue_v1& v : values) {
        v = dcgmFieldValue_v1{};
        v.version = dcgmFieldValue_version1;
      }
      if (api_.dcgmGetLatestValuesForFields(handle_, static_cast<int>(gpu), ids, kFieldCount,
                                            values) != DCGM_ST_OK) {
        continue;
      }
      for (unsigned int f = 0; f < kFieldCount; ++f) {
        if (values[f].fieldId != kFields[f].id) continue;
        counters[gpu]->*kFields[f].into = ValueOf(values[f]);
      }
    }
  }

 private:
  void* library_;
  DcgmApi api_;
  dcgmHandle_t handle_;
};

template <typename Fn>
bool Resolve(void* library, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

const std::vector<std::string>& DefaultDcgmLibraries() {
  static const std::vector<std::string> libraries = {"libdcgm.so.4", "libdcgm.so.3"};
  return libraries;
}

std::unique_ptr<DcgmProfiler> OpenDcgmProfiler(const std::vector<std::string>& libraries,
                                               std::string* why) {
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : libraries) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (library == nullptr) {
    *why = fmt::format("no libdcgm ({}): install datacenter-gpu-manager for DCGM_FI_PROF_*", tried);
    return nullptr;
  }
  DcgmApi api;
  if (!Resolve(library, "dcgmInit", api.dcgmInit) ||
      !Resolve(library, "dcgmShutdown", api.dcgmShutdown) ||
      !Resolve(library, "dcgmStartEmbedded", api.dcgmStartEmbedded) ||
      !Resolve(library, "dcgmStopEmbedded", api.dcgmStopEmbedded) ||
      !Resolve(library, "dcgmFieldGroupCreate", api.dcgmFieldGroupCreate) ||
      !Resolve(library, "dcgmWatchFields", api.dcgmWatchFields) ||
      !Resolve(library, "dcgmGetLatestValuesForFields", api.dcgmGetLatestValuesForFields) ||
      !Resolve(library, "errorString", api.errorString)) {
    *why = "libdcgm lacks a function of DCGM's C API";
    dlclose(library);
    return nullptr;
  }
  auto failed = [&](const char* call, dcgmReturn_t rc) {
    const char* text = api.errorString(rc);
    *why =
        fmt::format("DCGM: {} failed: {} (error {})", call, text != nullptr ? text : "unknown", rc);
    return nullptr;
  };
  if (dcgmReturn_t rc = api.dcgmInit(); rc != DCGM_ST_OK) {
    dlclose(library);
    return failed("dcgmInit", rc);
  }
  dcgmHandle_t handle = 0;
  if (dcgmReturn_t rc = api.dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &handle);
      rc != DCGM_ST_OK) {
    api.dcgmShutdown();
    dlclose(library);
    return failed("dcgmStartEmbedded", rc);
  }
  // From here the profiler owns the library, and stops DCGM when it goes.
  auto profiler = std::make_unique<LibDcgmProfiler>(library, api, handle);
  unsigned short ids[kFieldCount];
  for (unsigned int f = 0; f < kFieldCount; ++f)
    ids[f] = kFields[f].id;
  dcgmFieldGrp_t group = 0;
  char name[] = "shoal-agent-prof";
  if (dcgmReturn_t rc =
          api.dcgmFieldGroupCreate(handle, static_cast<int>(kFieldCount), ids, name, &group);
      rc != DCGM_ST_OK) {
    return failed("dcgmFieldGroupCreate", rc);
  }
  // Every second, keeping a few seconds of values (dcgm-exporter's cadence).
  if (dcgmReturn_t rc = api.dcgmWatchFields(handle, DCGM_GROUP_ALL_GPUS, group, 1'000'000, 5.0, 5);
      rc != DCGM_ST_OK) {
    return failed("dcgmWatchFields", rc);
  }
  return profiler;
}

}  // namespace shoal::agent
