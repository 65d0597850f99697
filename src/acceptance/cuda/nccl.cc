// NCCL collectives over 8 B .. 8 GiB, all GPUs of the node in one process
// (ncclCommInitAll), or every process of a multi-node job (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT) with its GPUs, the ncclUniqueId exchanged over
// TCP by bench/bootstrap.h. Figures as nccl-tests computes them
// (bench/collectives.h); every size's result is checked on a sample.
#include <algorithm>
#include <chrono>
#include <vector>

#include "acceptance/checks.h"
#include "acceptance/collectives.h"
#include "acceptance/cuda/cuda_util.h"
#include "acceptance/cuda/kernels.h"
#include "acceptance/cuda/node_tests.h"

namespace shoal::acceptance::gpu {

namespace {

constexpr int kSamplesPerRank = 4;
constexpr int kBootstrapTimeoutMs = 300'000;

// The communicators of this process's GPUs, their streams and buffers.
struct Ranks {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<DeviceBuffer> send, recv;
  int first_rank = 0;
  int total = 0;

  ~Ranks() {
    for (ncclComm_t c : comms) {
      if (c != nullptr) ncclCommDestroy(c);
    }
    for (cudaStream_t s : streams) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
  }
};

Status InitRanks(int local, const std::optional<DistEnv>& dist, Ranks* r) {
  r->comms.assign(static_cast<size_t>(local), nullptr);
  if (!dist) {
    std::vector<int> devices(static_cast<size_t>(local));
    for (int i = 0; i < local; ++i)
      devices[static_cast<size_t>(i)] = i;
    SHOAL_NCCL(ncclCommInitAll(r->comms.data(), local, devices.data()));
    r->first_rank = 0;
    r->total = local;
    return Status::Ok();
  }
  Status id_status;
  auto make_id = [&]() {
    ncclUniqueId id{};
    id_status = NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId");
    return std::string(id.internal, sizeof(id.internal));
  };
  SHOAL_ASSIGN_OR_RETURN(const BootstrapInfo info,
                         Bootstrap(*dist, local, make_id, kBootstrapTimeoutMs));
  SHOAL_RETURN_IF_ERROR(id_status);
  ncclUniqueId id{};
  if (info.unique_id.size() != sizeof(id.internal))
    return Internal("the NCCL unique id has the wrong size");
  std::copy(info.unique_id.begin(), info.unique_id.end(), id.internal);
  r->first_rank = info.first_rank;
  r->total = info.total_ranks;
  Log("nccl: process {} of {}: ranks {}..{} of {}", dist->rank, dist->world_size, info.first_rank,
      info.first_rank + local - 1, info.total_ranks);
  SHOAL_NCCL(ncclGroupStart());
  for (int i = 0; i < local; ++i) {
    SHOAL_CUDA(cudaSetDevice(i));
    SHOAL_NCCL(ncclCommInitRank(&r->comms[static_cast<size_t>(i)], info.total_ranks, id,
                                info.first_rank + i));
  }
  SHOAL_NCCL(ncclGroupEnd());
  return Status::Ok();
}

// Enqueues one collective on every local rank.
Status Launch(Collective c, const CollectiveCounts& counts, Ranks& r) {
  SHOAL_NCCL(ncclGroupStart());
  for (size_t i = 0; i < r.comms.size(); ++i) {
    const void* send = r.send[i].get();
    void* recv = r.recv[i].get();
    const auto chunk = static_cast<size_t>(counts.chunk);
    switch (c) {
      case Collective::kAllReduce:
        SHOAL_NCCL(ncclAllReduce(send, recv, static_cast<size_t>(counts.send_count), ncclFloat,
                                 ncclSum, r.comms[i], r.streams[i]));
        break;
      case Collective::kAllGather:
        SHOAL_NCCL(ncclAllGather(send, recv, chunk, ncclFloat, r.comms[i], r.streams[i]));
        break;
      case Collective::kReduceScatter:
        SHOAL_NCCL(
            ncclReduceScatter(send, recv, chunk, ncclFloat, ncclSum, r.comms[i], r.streams[i]));
        break;
      case Collective::kAllToAll:
        // As nccl-tests does it: a send and a receive to every peer, grouped
        // (ncclAlltoAll itself only exists in recent NCCL releases).
        for (int peer = 0; peer < r.total; ++peer) {
          SHOAL_NCCL(ncclSend(static_cast<const float*>(send) + peer * chunk, chunk, ncclFloat,
                              peer, r.comms[i], r.streams[i]));
          SHOAL_NCCL(ncclRecv(static_cast<float*>(recv) + peer * chunk, chunk, ncclFloat, peer,
                              r.comms[i], r.streams[i]));
        }
        break;
    }
  }
  SHOAL_NCCL(ncclGroupEnd());
  return Status::Ok();
}

Status SyncAll(const Ranks& r) {
  for (size_t i = 0; i < r.streams.size(); ++i) {
    SHOAL_CUDA(cudaSetDevice(static_cast<int>(i)));
    SHOAL_CUDA(cudaStreamSynchronize(r.streams[i]));
  }
  return Status::Ok();
}

Result<CheckOutcome> CheckResult(Collective c, const CollectiveCounts& counts, const Ranks& r) {
  std::vector<CollectiveSample> samples;
  for (size_t i = 0; i < r.comms.size(); ++i) {
    const int rank = r.first_rank + static_cast<int>(i);
    for (int64_t idx :
         SampleIndices(counts.recv_count, kSamplesPerRank, 0x77 + static_cast<uint64_t>(rank))) {
      float v = 0;
      SHOAL_CUDA(cudaMemcpy(&v, r.recv[i].as<float>() + idx, sizeof(v), cudaMemcpyDeviceToHost));
      samples.push_back({rank, idx, v});
    }
  }
  return CheckCollectiveSamples(c, r.total, counts, samples);
}

}  // namespace

Status RunNccl(const NodeOptions& options, const std::optional<DistEnv>& dist, Recorder& rec) {
  const int local = static_cast<int>(rec.results().gpus.size());
  if (!dist && local < 2) {
    rec.Note("nccl skipped: one GPU and no other nodes");
    return Status::Ok();
  }
  // Buffers sized by the GPU with the least free memory, so every rank runs
  // the same sizes.
  int64_t free_min = INT64_MAX;
  for (int i = 0; i < local; ++i) {
    SHOAL_CUDA(cudaSetDevice(i));
    size_t free_bytes = 0, total_bytes = 0;
    SHOAL_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    free_min = std::min(free_min, static_cast<int64_t>(free_bytes));
  }
  Ranks r;
  SHOAL_RETURN_IF_ERROR(InitRanks(local, dist, &r));
  // Across nodes, free memory differs: the cap must not, or the processes run
  // different sizes and hang. There, the operator's cap (default 8 GiB) is
  // used as given and must fit every node.
  const int64_t cap =
      dist ? options.nccl_max_bytes : NcclCapBytes(free_min, 0.7, options.nccl_max_bytes);
  if (cap < kNcclMinBytes) return FailedPrecondition("too little free GPU memory for NCCL buffers");
  r.streams.assign(static_cast<size_t>(local), nullptr);
  r.send.resize(static_cast<size_t>(local));
  r.recv.resize(static_cast<size_t>(local));
  for (int i = 0; i < local; ++i) {
    SHOAL_CUDA(cudaSetDevice(i));
    SHOAL_CUDA(
        cudaStreamCreateWithFlags(&r.streams[static_cast<size_t>(i)], cudaStreamNonBlocking));
    SHOAL_RETURN_IF_ERROR(r.send[static_cast<size_t>(i)].Allocate(cap));
    SHOAL_RETURN_IF_ERROR(r.recv[static_cast<size_t>(i)].Allocate(cap));
    SHOAL_CUDA(FillCollectiveInput(r.send[static_cast<size_t>(i)].as<float>(), cap / 4,
                                   r.first_rank + i, r.streams[static_cast<size_t>(i)]));
  }
  SHOAL_RETURN_IF_ERROR(SyncAll(r));
  const std::vector<int64_t> sizes = NcclSizes(options.quick, cap);
  Log("nccl: {} ranks, {} sizes up to {} MiB", r.total, sizes.size(), cap >> 20);
  for (Collective c : AllCollectives()) {
    double best_busbw = 0;
    for (int64_t size : sizes) {
      const CollectiveCounts counts = CountsFor(c, size, sizeof(float), r.total);
      if (counts.chunk == 0) continue;  // fewer elements than ranks
      for (int i = 0; i < kNcclWarmups; ++i)
        SHOAL_RETURN_IF_ERROR(Launch(c, counts, r));
      SHOAL_RETURN_IF_ERROR(SyncAll(r));
      const int iters = NcclIterations(counts.size_bytes, options.quick);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i)
        SHOAL_RETURN_IF_ERROR(Launch(c, counts, r));
      SHOAL_RETURN_IF_ERROR(SyncAll(r));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
      SHOAL_ASSIGN_OR_RETURN(const CheckOutcome check, CheckResult(c, counts, r));
      Measurement m;
      m.test = TestKind::kNccl;
      m.metric = std::string(CollectiveName(c));
      m.ranks = r.total;
      m.size_bytes = counts.size_bytes;
      m.value = BusBwGbps(c, counts.size_bytes, seconds, r.total);
      m.unit = std::string(kUnitGbps);
      m.params = {{"algbw_gbps", AlgBwGbps(counts.size_bytes, seconds)},
                  {"time_us", seconds * 1e6},
                  {"iterations", iters},
                  {"count", static_cast<double>(c == Collective::kAllReduce ? counts.send_count
                                                                            : counts.chunk)}};
      m.ok = check.ok;
      m.check = check.detail;
      best_busbw = std::max(best_busbw, m.value);
      if (!check.ok)
        Log("nccl {} {} B: WRONG RESULT: {}", m.metric, counts.size_bytes, check.detail);
      rec.Add(std::move(m));
    }
    Log("nccl {}: best busbw {:.1f} GB/s", CollectiveName(c), best_busbw);
  }
  return Status::Ok();
}

}  // namespace shoal::acceptance::gpu
