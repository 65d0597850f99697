// /v1/jobs (submit, list, show, output, cancel/hold/release/requeue,
// priority) and /v1/history.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/http_client.h"
#include "server/job_pages.h"
#include "server/routes.h"

namespace shoal::server::routes {

namespace {

// ?state=pending,running,... by name or squeue's code (PD,R), or "all";
// empty is left to the caller. *err says which is unknown.
std::vector<JobState> ParseStates(const std::string& text, Status* err) {
  std::vector<JobState> out;
  if (text.empty()) return out;
  if (ToLower(text) == "all") return {std::begin(kJobStates), std::end(kJobStates)};
  for (std::string_view s : Split(text, ',')) {
    auto st = ParseJobState(s);
    if (!st.ok()) {
      *err = st.status();
      return {};
    }
    out.push_back(*st);
  }
  return out;
}

void Submit(const Context& ctx, const Identity& who, const httplib::Request& req,
            httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto spec = api::JobSpecFromJson(*body);
  if (!spec.ok()) return Reply(res, spec.status());
  // ?test_only=true (sbatch --test-only): when and where it would start;
  // nothing is stored.
  if (req.get_param_value("test_only") == "true") {
    return Reply(res, ctx.loop.Call<Json>([who, s = std::move(*spec)](Controller& c, Time now) {
      return c.TestSubmit(who, s, now);
    }));
  }
  Reply(res, ctx.loop.Call<Json>([who, s = std::move(*spec)](Controller& c, Time now) mutable {
    return c.Submit(who, std::move(s), now);
  }),
        201);
}

// POST /v1/jobs/batch {"jobs": [spec, ...]}: every job or none, in one
// commit (Controller::SubmitAll).
void SubmitBatch(const Context& ctx, const Identity& who, const httplib::Request& req,
                 httplib::Response& res) {
  constexpr size_t kMaxBatch = 10000;
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  if (!body->is_object() || !body->contains("jobs") || !(*body)["jobs"].is_array())
    return Reply(res, InvalidArgument("a batch is {\"jobs\": [job spec, ...]}"));
  const Json& list = (*body)["jobs"];
  if (list.size() > kMaxBatch)
    return Reply(res, InvalidArgument(
                          fmt::format("{} jobs in one batch; at most {}", list.size(), kMaxBatch)));
  std::vector<JobSpec> specs;
  specs.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    auto spec = api::JobSpecFromJson(list[i]);
    if (!spec.ok()) {
      return Reply(res, Status(spec.status().code(),
                               fmt::format("job {} of {}: {} (none was submitted)", i + 1,
                                           list.size(), spec.status().message())));
    }
    specs.push_back(std::move(*spec));
  }
  Reply(res, ctx.loop.Call<Json>([who, s = std::move(specs)](Controller& c, Time now) mutable {
    return c.SubmitAll(who, std::move(s), now);
  }),
        201);
}

// How a listing writes each job.
struct JobListing {
  bool brief = false;            // without commands, scripts, arguments and environments
  bool collapse_arrays = false;  // one object for each run of an array's pending tasks
};

// A pending array task, whose object a collapsed listing may fold into the
// one before it.
bool PendingTask(const Job& job) {
  return job.state == JobState::kPending && job.array_task_id >= 0;
}

// The page of jobs `f` selects after f.after, at most f.limit (>= 1) of them:
// the controller's, merged with the finished ones only the store still has
// when finished states are asked for (server/job_pages.h). With
// `collapse_arrays`, the pending tasks of one array that follow each other in
// the page are one object, the first's, whose "pending_tasks" lists every
// one's index: an array of 100,000 waiting tasks is one object a page, not
// 1,000, which is all that a table of the queue shows of it (7_[0-99999]).
Result<ListingPage> ReadJobPage(const Context& ctx, const Identity& who, JobFilter f,
                                JobListing how) {
  const size_t limit = f.limit;
  state::HistoryQuery q;
  for (JobState s : f.states) {
    if (IsTerminal(s)) q.states.push_back(s);
  }
  q.since = f.ended_since;
  std::vector<Job> stored;
  std::optional<uint64_t> store_bound;
  if (!q.states.empty()) {
    q.user = f.UserFor(who);
    q.after_id = f.after;
    q.by_id = true;
    q.limit = static_cast<int>(limit + 1);
    SHOAL_ASSIGN_OR_RETURN(stored, ctx.store.History(q));
    if (stored.size() > limit) store_bound = stored.back().id.value();
  }
  struct Parts {
    std::vector<JobView> views;
    std::vector<Job> stored;
  };
  f.limit = limit + 1;
  SHOAL_ASSIGN_OR_RETURN(
      Parts parts, ctx.loop.Call<Parts>([who, f, stored = std::move(stored)](
                                            Controller& c, Time) mutable -> Result<Parts> {
        SHOAL_ASSIGN_OR_RETURN(auto jobs, c.ListJobs(who, f));
        Parts out;
        out.views.reserve(jobs.size());
        for (auto& j : jobs)
          out.views.push_back(c.View(std::move(j)));
        // The controller's record of a job it holds is the newer one.
        std::erase_if(
            stored, [&](const Job& j) { return c.Holds(j.id) || !c.InPartition(j, f.partition); });
        out.stored = std::move(stored);
        return out;
      }));
  std::vector<uint64_t> controller_ids, store_ids;
  for (const JobView& v : parts.views)
    controller_ids.push_back(v.job->id.value());
  for (const Job& j : parts.stored)
    store_ids.push_back(j.id.value());
  std::optional<uint64_t> controller_bound;
  if (controller_ids.size() > limit) controller_bound = controller_ids.back();
  const PageCut cut = CutPage({controller_ids, controller_bound}, {store_ids, store_bound}, limit);
  // The JSON is built here, off the loop's thread, one job at a time.
  ListingPage page;
  if (cut.next_after) page.next_after = Json(*cut.next_after);
  Json run;  // the collapsed run of one array's pending tasks not written yet
  auto write = [&page](const Json& job) {
    if (!page.objects.empty()) page.objects += ',';
    page.objects += job.dump();
  };
  size_t c = 0, s = 0;
  while (c < cut.from_controller || s < cut.from_store) {
    const bool from_controller =
        s == cut.from_store || (c < cut.from_controller && controller_ids[c] < store_ids[s]);
    const Job* task = from_controller && how.collapse_arrays && PendingTask(*parts.views[c].job)
                          ? parts.views[c].job.get()
                          : nullptr;
    if (task != nullptr && !run.is_null() &&
        run["array_job_id"].get<uint64_t>() == task->array_job_id.value()) {
      run["pending_tasks"].push_back(task->array_task_id);
      ++c;
      continue;
    }
    if (!run.is_null()) write(std::exchange(run, Json()));
    Json job = from_controller ? JobViewJson(parts.views[c++]) : api::ToJson(parts.stored[s++]);
    if (how.brief) {
      for (const char* bulky : {"command", "env", "argv", "script_args"})
        job["spec"].erase(bulky);
    }
    if (task != nullptr) {
      job["pending_tasks"] = Json::array({task->array_task_id});
      run = std::move(job);
    } else {
      write(job);
    }
  }
  if (!run.is_null()) write(run);
  return page;
}

// GET /v1/jobs?state=&ended_since=&user=&all=1&partition=&limit=&after=&brief=1&arrays=collapsed:
// with `limit`,
// one page ({"jobs": [...], "next_after": id} while more follow); without,
// every job, streamed a page at a time so that neither the server nor the
// loop holds the whole listing at once.
void ListJobs(const Context& ctx, const Identity& who, const httplib::Request& req,
              httplib::Response& res) {
  constexpr size_t kStreamPage = 1000;
  JobFilter f;
  f.user = req.get_param_value("user");
  f.all_users = req.get_param_value("all") == "1";
  f.partition = req.get_param_value("partition");
  Status err;
  f.states = ParseStates(req.get_param_value("state"), &err);
  if (!err.ok()) return Reply(res, err);
  if (req.has_param("ended_since")) {
    auto v = ParseDouble(req.get_param_value("ended_since"));
    if (!v.ok() || !(*v >= 0 && *v < 1e11))
      return Reply(res, InvalidArgument("ended_since must be a time (Unix seconds)"));
    f.ended_since = TimeFromSeconds(*v);
  }
  const bool paged = req.has_param("limit");
  auto limit = PageLimit(req, kStreamPage);
  if (!limit.ok()) return Reply(res, limit.status());
  f.limit = *limit;
  if (req.has_param("after")) {
    auto v = ParseInt(req.get_param_value("after"));
    if (!v.ok() || *v < 0) return Reply(res, InvalidArgument("after must be a job id"));
    f.after = static_cast<uint64_t>(*v);
  }
  JobListing how;
  how.brief = req.get_param_value("brief") == "1";
  if (req.has_param("arrays")) {
    const std::string arrays = req.get_param_value("arrays");
    if (arrays != "collapsed" && arrays != "each")
      return Reply(res, InvalidArgument("arrays must be 'collapsed' or 'each'"));
    how.collapse_arrays = arrays == "collapsed";
  }
  auto first = ReadJobPage(ctx, who, f, how);
  if (!first.ok()) return Reply(res, first.status());
  ReplyListing(res, "jobs", paged, std::move(*first), [&ctx, who, f, how](const Json& after) {
    JobFilter next = f;
    next.after = after.get<uint64_t>();
    return ReadJobPage(ctx, who, next, how);
  });
}

void ShowJob(const Context& ctx, const Identity& who, const httplib::Request& req,
             httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  auto r = ctx.loop.Call<Json>([who, id = *id](Controller& c, Time) { return c.ShowJob(who, id); });
  if (r.ok() || r.status().code() != StatusCode::kNotFound) return Reply(res, r);
  // Not in memory: the history may have it.
  auto old = ctx.store.FindJob(*id);
  if (!old.ok()) return Reply(res, old.status());
  if (!*old) return Reply(res, r.status());
  if (!who.admin() && (*old)->spec.user != who.user) {
    return Reply(res, Status(StatusCode::kPermissionDenied, "that job belongs to another user"));
  }
  Reply(res, api::ToJson(**old));
}

// Where a job's output lies: the controller knows for the jobs it holds,
// the history for older ones.
Result<Controller::OutputSource> OutputSourceOf(const Context& ctx, const Identity& who, JobId id) {
  auto where = ctx.loop.Call<Controller::OutputSource>(
      [who, id](Controller& c, Time) { return c.OutputOf(who, id, nullptr); });
  if (!where.ok() && where.status().code() == StatusCode::kNotFound) {
    auto stored = ctx.store.FindJob(id);
    if (!stored.ok()) return stored.status();
    if (*stored) {
      where = ctx.loop.Call<Controller::OutputSource>(
          [who, id, job = **stored](Controller& c, Time) { return c.OutputOf(who, id, &job); });
    }
  }
  return where;
}

// A chunk of a job's output (?stream=stdout|stderr&offset=N), read from
// the agent of its first node. The body is the raw bytes; X-Shoal-Size is
// the file's size, so that `shoal logs -f` knows where to read on.
void JobOutput(const Context& ctx, const Identity& who, const httplib::Request& req,
               httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  const std::string stream = req.has_param("stream") ? req.get_param_value("stream") : "stdout";
  if (stream != "stdout" && stream != "stderr")
    return Reply(res, InvalidArgument("stream is stdout or stderr"));
  auto offset =
      req.has_param("offset") ? ParseInt(req.get_param_value("offset")) : Result<int64_t>(0);
  if (!offset.ok() || *offset < 0)
    return Reply(res, InvalidArgument("offset must be a number of bytes"));
  auto where = OutputSourceOf(ctx, who, *id);
  if (!where.ok()) return Reply(res, where.status());
  ProxyAgentOutput(
      ctx, where->node, where->address,
      fmt::format("/v1/jobs/{}/output?stream={}&offset={}", id->value(), stream, *offset), res);
}

// cancel, hold, release or requeue (the route's second group).
void JobAction(const Context& ctx, const Identity& who, const httplib::Request& req,
               httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  const std::string action = req.matches[2].str();
  auto r = ctx.loop.Call<Json>([who, id = *id, action](Controller& c, Time now) -> Result<Json> {
    Status s = action == "cancel"    ? c.Cancel(who, id, now)
               : action == "hold"    ? c.Hold(who, id, now)
               : action == "release" ? c.Release(who, id, now)
                                     : c.Requeue(who, id, now);
    if (!s.ok()) return s;
    return Json{{"job", id.value()}, {"done", action}};
  });
  Reply(res, r);
}

// scancel --signal: {"signal": 1..64, "batch": bool}.
void SignalJob(const Context& ctx, const Identity& who, const httplib::Request& req,
               httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  const bool shaped = body->is_object() && body->contains("signal") &&
                      (*body)["signal"].is_number_integer() &&
                      (!body->contains("batch") || (*body)["batch"].is_boolean()) &&
                      body->size() == 1 + body->count("batch");
  if (!shaped)
    return Reply(res, InvalidArgument("expected {\"signal\": 1..64, \"batch\": true|false}"));
  const int64_t sig = (*body)["signal"].get<int64_t>();
  if (sig < 1 || sig > 64) return Reply(res, InvalidArgument("a signal is 1..64"));
  const bool batch = body->value("batch", false);
  Reply(res,
        ctx.loop.Call<Json>([who, id = *id, sig, batch](Controller& c, Time now) -> Result<Json> {
          SHOAL_RETURN_IF_ERROR(c.Signal(who, id, static_cast<int>(sig), batch, now));
          return Json{{"job", id.value()}, {"done", "signal"}, {"signal", sig}};
        }));
}

void SetPriority(const Context& ctx, const Identity& who, const httplib::Request& req,
                 httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  if (!body->is_object() || body->size() != 1 || !body->contains("priority") ||
      !(*body)["priority"].is_number_integer()) {
    return Reply(res, InvalidArgument("only {\"priority\": N} can be changed"));
  }
  const int64_t p = (*body)["priority"].get<int64_t>();
  Reply(res, ctx.loop.Call<Json>([who, id = *id, p](Controller& c, Time now) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.SetPriority(who, id, p, now));
    return Json{{"job", id.value()}, {"priority", p}};
  }));
}

void History(const Context& ctx, const Identity& who, const httplib::Request& req,
             httplib::Response& res) {
  state::HistoryQuery q;
  q.user = req.get_param_value("user");
  if (req.get_param_value("all") == "1") {
    if (!who.admin())
      return Reply(res,
                   Status(StatusCode::kPermissionDenied, "only admins see every user's history"));
  } else if (q.user.empty()) {
    q.user = who.user;
  } else if (q.user != who.user && !who.admin()) {
    return Reply(res, Status(StatusCode::kPermissionDenied, "you may see only your own history"));
  }
  q.account = req.get_param_value("account");
  Status err;
  q.states = ParseStates(req.get_param_value("state"), &err);
  if (!err.ok()) return Reply(res, err);
  if (req.has_param("since")) {
    auto v = ParseDouble(req.get_param_value("since"));
    if (!v.ok()) return Reply(res, v.status());
    q.since = TimeFromSeconds(*v);
  }
  if (req.has_param("limit")) {
    auto v = ParseInt(req.get_param_value("limit"));
    if (!v.ok() || *v <= 0) return Reply(res, InvalidArgument("limit must be a positive number"));
    q.limit = static_cast<int>(std::min<int64_t>(*v, 10000));
  }
  auto jobs = ctx.store.History(q);
  if (!jobs.ok()) return Reply(res, jobs.status());
  Json out = Json::array();
  for (const Job& j : *jobs)
    out.push_back(api::ToJson(j));
  Reply(res, Json{{"jobs", out}});
}

// The agent's answer to a request made with `send` over a new connection;
// Unavailable (replied) when the agent cannot be reached.
template <typename Send>
std::optional<net::HttpResponse> AskAgent(const Context& ctx, const std::string& node,
                                          const std::string& address, httplib::Response& res,
                                          Send&& send, int read_timeout_ms = 10000) {
  auto agent = net::HttpClient::Connect(
      address, ctx.agents.For(node, 2000, read_timeout_ms, /*keep_alive=*/false));
  if (!agent.ok()) {
    Reply(res, agent.status());
    return std::nullopt;
  }
  Result<net::HttpResponse> r = send(**agent);
  if (!r.ok()) {
    Reply(res, Status(StatusCode::kUnavailable,
                      fmt::format("cannot reach the agent of {}: {}", node, r.status().message())));
    return std::nullopt;
  }
  if (r->status != 200) {
    res.status = r->status;
    res.set_content(r->body, "application/json");
    return std::nullopt;
  }
  return std::move(*r);
}

// What jobs' earlier runs taught of their speeds (server/speeds.h), and
// forgetting one job name's: ?user= (an admin's, for another user) and, to
// forget, ?name=.
void LearnedSpeeds(const Context& ctx, const Identity& who, const httplib::Request& req,
                   httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([who, user = req.get_param_value("user")](Controller& c, Time) {
    return c.LearnedSpeedsJson(who, user);
  }));
}

void ForgetSpeeds(const Context& ctx, const Identity& who, const httplib::Request& req,
                  httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>(
                 [who, user = req.get_param_value("user"), name = req.get_param_value("name")](
                     Controller& c, Time) { return c.ForgetSpeeds(who, user, name); }));
}

}  // namespace

void ProxyAgentOutput(const Context& ctx, const std::string& node, const std::string& address,
                      const std::string& path, httplib::Response& res) {
  auto r = AskAgent(ctx, node, address, res, [&](net::HttpClient& a) { return a.Get(path); });
  if (!r) return;
  res.status = 200;
  for (const char* h : {"X-Shoal-Size", "X-Shoal-Path"}) {
    if (auto v = r->headers.find(h); v != r->headers.end()) res.set_header(h, v->second);
  }
  res.set_header("X-Shoal-Node", node);
  res.set_content(std::move(r->body), "application/octet-stream");
}

void ProxyAgentPost(const Context& ctx, const std::string& node, const std::string& address,
                    const std::string& path, const std::string& body, httplib::Response& res,
                    int read_timeout_ms) {
  auto r = AskAgent(
      ctx, node, address, res,
      [&](net::HttpClient& a) { return a.Post(path, body, "application/octet-stream"); },
      read_timeout_ms);
  if (!r) return;
  res.status = 200;
  res.set_content(std::move(r->body), "application/json");
}

void AddJobRoutes(httplib::Server& http, const Context& ctx) {
  http.Post("/v1/jobs", HandleAuthed(ctx, Submit));
  http.Post("/v1/jobs/batch", HandleAuthed(ctx, SubmitBatch));
  http.Get("/v1/jobs", HandleAuthed(ctx, ListJobs));
  http.Get(R"(/v1/jobs/(\d+))", HandleAuthed(ctx, ShowJob));
  http.Get(R"(/v1/jobs/(\d+)/log)", HandleAuthed(ctx, JobOutput));
  http.Post(R"(/v1/jobs/(\d+)/(cancel|hold|release|requeue))", HandleAuthed(ctx, JobAction));
  http.Post(R"(/v1/jobs/(\d+)/signal)", HandleAuthed(ctx, SignalJob));
  http.Patch(R"(/v1/jobs/(\d+))", HandleAuthed(ctx, SetPriority));
  http.Get("/v1/history", HandleAuthed(ctx, History));
  http.Get("/v1/speeds", HandleAuthed(ctx, LearnedSpeeds));
  http.Delete("/v1/speeds", HandleAuthed(ctx, ForgetSpeeds));
}

}  // namespace shoal::server::routes
