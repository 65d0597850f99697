// The agent's side of the node protocol (api/node_protocol.h, docs/api.md):
// the launch and kill orders the server sends, decoded by the protocol's
// strict decoders and turned into what the agent runs, and the heartbeat
// the agent sends back. Pure functions; tests/agent/node_protocol_test.cc
// checks them against the server's encoders and decoders.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/gpu/provider.h"
#include "agent/health.h"
#include "agent/launch/steps.h"
#include "api/json.h"
#include "api/node_protocol.h"
#include "core/status.h"

namespace shoal::agent {

// What the agent adds to each step it runs: how the tasks reach Shoal.
struct StepContext {
  std::string server{};          // the server's URL, as SHOAL_SERVER
  std::string ca_file{};         // a copy of the cluster CA the tasks can read, as SHOAL_CA_FILE
  std::string slurm_commands{};  // the shoal binary behind the job's srun and scontrol ("": none)
};

// A launch order as the step to run on this node: step 0 of a batch job is
// one task (the script) on the first node; step 0 of another job spreads its
// tasks over the job's nodes in blocks (the first `tasks % nodes` nodes get
// one more), one per node when the job names no task count; a later step
// (`shoal run`) runs on the nodes and with the task counts its order names.
// Every step's environment holds the job's SLURM_* variables.
Result<StepRequest> StepFromLaunch(const api::Json& launch, const std::string& node_name,
                                   const StepContext& context = {});

struct KillRequest {
  uint64_t job = 0;
  uint64_t epoch = 0;
  std::optional<uint32_t> step;  // absent: every step of the epoch
  Duration grace{0};
  std::string why;
  int signal = 0;  // set: send this signal instead of stopping
  bool leader_only = false;
};
Result<KillRequest> KillFromJson(const api::Json& kill);

// The host part of "host:port".
std::string HostOf(const std::string& address);
// This machine's host name; "localhost" when it has none.
std::string HostName();

// The node's GPUs and MIG slices as the server schedules them.
std::vector<Gpu> NodeGpus(const std::vector<GpuDevice>& devices);

// Fills in what each of the step's GPUs is on this host (StepRequest::
// gpu_units) from the agent's devices: its physical GPU, and for a MIG
// slice its instance ids and "MIG-<uuid>". An index the host lacks is an
// error (a stale order after a re-partition).
Status DescribeStepGpus(StepRequest& step, const std::vector<GpuDevice>& devices);

// Logs a `protocol.mismatch` warning when the server's answer to a
// registration names a node protocol other than this agent's: one apart
// works (api/node_protocol.h), as while an upgrade is under way; further
// apart does not.
void NoteServerProtocol(const api::Json& registration_answer);

// What the agent knows about one step for the heartbeat.
struct StepReport {
  uint64_t job = 0;
  uint64_t epoch = 0;
  uint32_t step = 0;
  bool running = false;  // else it has ended
  int exit_code = 0;
  int signal = 0;
  std::string message;
  Time ended{};         // when it ended, where its supervisor recorded it
  double progress = 0;  // running: the rate its progress file says (0: none)
};

// A GPU's reading as the node protocol (and the agent's /metrics) carries it.
api::GpuTelemetry TelemetryOf(const GpuSample& s);

// The heartbeat: steps that run, steps that ended (events), and each GPU's
// health and telemetry. Without `with_gpus` (the extra beats that report a
// step's end at once) the GPUs are left out: the server keeps the last ones.
api::Heartbeat HeartbeatFrom(const std::vector<StepReport>& steps,
                             const std::vector<GpuDevice>& devices,
                             const std::vector<GpuSample>& samples,
                             const std::vector<GpuHealth>& health, bool with_gpus = true);
// Its JSON body (api::ToJson of the above).
api::Json HeartbeatJson(const std::vector<StepReport>& steps, const std::vector<GpuDevice>& devices,
                        const std::vector<GpuSample>& samples, const std::vector<GpuHealth>& health,
                        bool with_gpus = true);

}  // namespace shoal::agent
