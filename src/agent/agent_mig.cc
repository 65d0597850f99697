// The agent's side of `shoal node mig`: the controller's order, applied by
// the loop thread (which owns the GPU provider) while no step runs.
#include <fmt/format.h>

#include <chrono>

#include "agent/agent_impl.h"
#include "core/log.h"

namespace shoal::agent {

namespace {

// Partitioning takes the driver a few seconds per GPU on real hardware.
constexpr auto kMigOrderTimeout = std::chrono::seconds(120);

}  // namespace

void Agent::Impl::HandleMig(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req))
    return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
  auto body = api::Parse(req.body);
  if (!body.ok()) return ReplyError(res, body.status());
  auto order = api::MigOrderFromJson(*body);
  if (!order.ok()) return ReplyError(res, order.status());
  auto pending = std::make_shared<MigPending>();
  pending->order = std::move(*order);
  std::future<Result<Json>> done = pending->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (mig_pending) {
      return ReplyError(res, FailedPrecondition("another MIG order is being applied"));
    }
    mig_pending = pending;
    wake = true;
  }
  cv.notify_all();
  if (done.wait_for(kMigOrderTimeout) != std::future_status::ready) {
    return ReplyError(res, Status(StatusCode::kUnavailable,
                                  "the MIG order is still being applied; see `shoal nodes`"));
  }
  Result<Json> answer = done.get();
  if (!answer.ok()) return ReplyError(res, answer.status());
  Reply(res, 200, *answer);
}

Result<Json> Agent::Impl::ApplyMig(const api::MigOrder& order, net::HttpClient& client) {
  for (const StepState& st : steps->Scan()) {
    if (st.phase == StepPhase::kRunning || st.phase == StepPhase::kStarting) {
      return FailedPrecondition(
          fmt::format("job {} runs on this node: re-partition it once it is empty", st.job));
    }
  }
  SHOAL_ASSIGN_OR_RETURN(const catalog::MigLayouts plan,
                         catalog::PlanMigLayouts(NodeGpus(devices), order.layout, order.gpus));
  Result<std::vector<GpuDevice>> now = ApplyMigPlan(*gpus, plan);
  // Whatever was applied before an error is what the GPUs are now.
  Result<std::vector<GpuDevice>> found = now.ok() ? now : gpus->Discover();
  if (found.ok()) {
    if (gpus->kind() == "simulated") {
      if (Status s = SaveMigLayouts(StateFile(*steps, kMigLayoutFile), *found); !s.ok())
        log::Warning("mig.layout_not_kept", {{"error", s.message()}});
    }
    std::lock_guard<std::mutex> lock(mu);
    devices = std::move(*found);
    node.gpus = NodeGpus(devices);
    last_samples.clear();
  }
  health = std::make_unique<HealthMonitor>(devices, options.health);
  log::Info("mig.applied", {{"layout", order.layout},
                            {"gpus", static_cast<int64_t>(devices.size())},
                            {"error", now.ok() ? "" : now.status().message()}});
  // The server schedules by the registered GPUs: tell it now.
  SHOAL_RETURN_IF_ERROR(Register(client).WithContext("registering the new GPUs"));
  if (!now.ok()) return now.status();
  Json gpus_json = Json::array();
  for (const GpuDevice& d : devices) {
    gpus_json.push_back({{"index", d.index},
                         {"device", d.device},
                         {"uuid", d.uuid},
                         {"model", d.model},
                         {"memory_mib", d.memory_mib}});
  }
  return Json{{"node", node.name}, {"layout", order.layout}, {"gpus", gpus_json}};
}

}  // namespace shoal::agent
