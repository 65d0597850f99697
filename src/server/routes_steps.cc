// /v1/jobs/{id}/steps: `shoal run` inside a running job, a step's cancel,
// and what its tasks write.
#include <fmt/format.h>

#include <string>

#include "server/routes.h"

namespace shoal::server::routes {

namespace {

// The step id of a route whose second group is (\d+).
Result<uint32_t> StepIdOf(const httplib::Request& req) {
  auto v = ParseInt(req.matches[2].str());
  if (!v.ok() || *v <= 0 || *v > 0xffffff) return InvalidArgument("bad step id");
  return static_cast<uint32_t>(*v);
}

void CreateStep(const Context& ctx, const Identity& who, const httplib::Request& req,
                httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto spec = api::StepSpecFromJson(*body);
  if (!spec.ok()) return Reply(res, spec.status());
  Reply(res,
        ctx.loop.Call<Json>([who, id = *id, s = std::move(*spec)](Controller& c, Time now) mutable {
          return c.CreateStep(who, id, std::move(s), now);
        }),
        201);
}

void CancelStep(const Context& ctx, const Identity& who, const httplib::Request& req,
                httplib::Response& res) {
  auto id = JobIdOf(req);
  auto step = StepIdOf(req);
  if (!id.ok() || !step.ok()) return Reply(res, id.ok() ? step.status() : id.status());
  Reply(res,
        ctx.loop.Call<Json>([who, id = *id, step = *step](Controller& c, Time now) -> Result<Json> {
          SHOAL_RETURN_IF_ERROR(c.CancelStep(who, id, step, now));
          return Json{{"job", id.value()}, {"step", step}, {"done", "cancel"}};
        }));
}

// ?task=R&stream=stdout|stderr&offset=N: a chunk of what task R wrote,
// from the agent of its node.
void StepOutput(const Context& ctx, const Identity& who, const httplib::Request& req,
                httplib::Response& res) {
  auto id = JobIdOf(req);
  auto step = StepIdOf(req);
  if (!id.ok() || !step.ok()) return Reply(res, id.ok() ? step.status() : id.status());
  auto task = ParseInt(req.get_param_value("task"));
  auto offset =
      req.has_param("offset") ? ParseInt(req.get_param_value("offset")) : Result<int64_t>(0);
  const std::string stream = req.has_param("stream") ? req.get_param_value("stream") : "stdout";
  if (!task.ok() || *task < 0 || *task > 1000000 || !offset.ok() || *offset < 0 ||
      (stream != "stdout" && stream != "stderr")) {
    return Reply(res, InvalidArgument("task and offset are numbers; stream is stdout or stderr"));
  }
  auto where = ctx.loop.Call<Controller::TaskSource>(
      [who, id = *id, step = *step, t = static_cast<int>(*task)](Controller& c, Time) {
        return c.StepTaskOf(who, id, step, t);
      });
  if (!where.ok()) return Reply(res, where.status());
  ProxyAgentOutput(ctx, where->node, where->address,
                   fmt::format("/v1/jobs/{}/steps/{}/output?epoch={}&task={}&stream={}&offset={}",
                               id->value(), *step, where->epoch, *task, stream, *offset),
                   res);
}

// What the user types into a --pty step's terminal (the body's bytes, at
// most 64 KiB a request), with ?rows=R&cols=C when the window changed size
// and ?eof=1 at the end of input: to the agent of the step's task 0.
void StepInput(const Context& ctx, const Identity& who, const httplib::Request& req,
               httplib::Response& res) {
  auto id = JobIdOf(req);
  auto step = StepIdOf(req);
  if (!id.ok() || !step.ok()) return Reply(res, id.ok() ? step.status() : id.status());
  if (req.body.size() > kMaxTerminalInputBytes)
    return Reply(res, InvalidArgument("terminal input: at most 64 KiB a request"));
  auto rows = req.has_param("rows") ? ParseInt(req.get_param_value("rows")) : Result<int64_t>(0);
  auto cols = req.has_param("cols") ? ParseInt(req.get_param_value("cols")) : Result<int64_t>(0);
  if (!rows.ok() || !cols.ok() || *rows < 0 || *rows > 0xffff || *cols < 0 || *cols > 0xffff)
    return Reply(res, InvalidArgument("rows and cols are numbers from 0 to 65535"));
  auto where =
      ctx.loop.Call<Controller::TaskSource>([who, id = *id, step = *step](Controller& c, Time) {
        return c.StepTaskOf(who, id, step, 0);
      });
  if (!where.ok()) return Reply(res, where.status());
  std::string path =
      fmt::format("/v1/jobs/{}/steps/{}/input?epoch={}", id->value(), *step, where->epoch);
  if (*rows > 0 && *cols > 0) path += fmt::format("&rows={}&cols={}", *rows, *cols);
  if (req.get_param_value("eof") == "1") path += "&eof=1";
  ProxyAgentPost(ctx, where->node, where->address, path, req.body, res);
}

}  // namespace

void AddStepRoutes(httplib::Server& http, const Context& ctx) {
  http.Post(R"(/v1/jobs/(\d+)/steps)", HandleAuthed(ctx, CreateStep));
  http.Post(R"(/v1/jobs/(\d+)/steps/(\d+)/cancel)", HandleAuthed(ctx, CancelStep));
  http.Get(R"(/v1/jobs/(\d+)/steps/(\d+)/output)", HandleAuthed(ctx, StepOutput));
  http.Post(R"(/v1/jobs/(\d+)/steps/(\d+)/input)", HandleAuthed(ctx, StepInput));
}

}  // namespace shoal::server::routes
