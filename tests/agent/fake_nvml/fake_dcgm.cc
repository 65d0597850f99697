// A fake libdcgm.so.4 for the DCGM profiler's tests: the few functions of
// DCGM's C API that agent/gpu/dcgm_profiler.cc calls, with values a test
// can predict, and counts it can check:
//   DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001)  0.5 + gpu / 100, a double
//   DCGM_FI_PROF_SM_ACTIVE (1002)         DCGM's blank double: not measured
//   DCGM_FI_PROF_SM_OCCUPANCY (1003)      an error status: not measured
//   DCGM_FI_PROF_PCIE_TX_BYTES (1009)     1000 * gpu, an int64
//   any other field                       0.25, a double
// Fields are only answered once watched, as DCGM does.
#include <cstdint>
#include <cstring>

extern "C" {

typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;
typedef int dcgmReturn_t;

typedef struct {
  unsigned int version;
  unsigned short fieldId;
  unsigned short fieldType;
  int status;
  int64_t ts;
  union {
    int64_t i64;
    double dbl;
    char str[256];
    char blob[4096];
  } value;
} dcgmFieldValue_v1;

namespace {
int g_initialised = 0;
int g_embedded = 0;
int g_watched = 0;
int g_fail_start = 0;  // what dcgmStartEmbedded answers
constexpr dcgmReturn_t kOk = 0;
constexpr dcgmReturn_t kNotWatched = -32;  // DCGM_ST_NOT_WATCHED
constexpr dcgmReturn_t kNoData = -14;      // DCGM_ST_NO_DATA
}  // namespace

// Test controls.
int fake_dcgm_embedded(void) {
  return g_embedded;
}
int fake_dcgm_initialised(void) {
  return g_initialised;
}
void fake_dcgm_fail_start(int rc) {
  g_fail_start = rc;
}

dcgmReturn_t dcgmInit(void) {
  ++g_initialised;
  return kOk;
}
dcgmReturn_t dcgmShutdown(void) {
  --g_initialised;
  return kOk;
}
dcgmReturn_t dcgmStartEmbedded(int opMode, dcgmHandle_t* handle) {
  if (opMode != 1 || handle == nullptr) return -1;
  if (g_fail_start != 0) return g_fail_start;
  ++g_embedded;
  *handle = 42;
  return kOk;
}
dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t handle) {
  if (handle != 42) return -1;
  --g_embedded;
  g_watched = 0;
  return kOk;
}
dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t handle, int numFieldIds, unsigned short* fieldIds,
                                  const char* name, dcgmFieldGrp_t* group) {
  if (handle != 42 || numFieldIds <= 0 || fieldIds == nullptr || name == nullptr) return -1;
  *group = static_cast<dcgmFieldGrp_t>(numFieldIds);
  return kOk;
}
dcgmReturn_t dcgmWatchFields(dcgmHandle_t handle, dcgmGpuGrp_t gpus, dcgmFieldGrp_t group,
                             long long updateFreq, double maxKeepAge, int maxKeepSamples) {
  if (handle != 42 || gpus != 0x7fffffff || updateFreq <= 0 || maxKeepAge <= 0 ||
      maxKeepSamples <= 0)
    return -1;
  g_watched = static_cast<int>(group);
  return kOk;
}
dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t handle, int gpu, unsigned short fields[],
                                          unsigned int count, dcgmFieldValue_v1 values[]) {
  if (handle != 42 || gpu < 0 || gpu >= 16) return -1;
  for (unsigned int i = 0; i < count; ++i) {
    dcgmFieldValue_v1& v = values[i];
    if ((v.version & 0xffffffu) != sizeof(dcgmFieldValue_v1) || (v.version >> 24) != 1) return -1;
    v.fieldId = fields[i];
    v.fieldType = 'd';
    v.status = g_watched > 0 ? kOk : kNotWatched;
    v.value.dbl = 0.25;
    if (fields[i] == 1001) v.value.dbl = 0.5 + gpu / 100.0;
    if (fields[i] == 1002) v.value.dbl = 140737488355328.0;  // DCGM_FP64_BLANK
    if (fields[i] == 1003) v.status = kNoData;
    if (fields[i] == 1009) {
      v.fieldType = 'i';
      v.value.i64 = 1000LL * gpu;
    }
  }
  return kOk;
}
const char* errorString(dcgmReturn_t rc) {
  return rc == kOk ? "Success" : "Fake DCGM error";
}

}  // extern "C"
