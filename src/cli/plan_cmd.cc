// shoal plan: size a cluster for a workload, side by side for each GPU model;
// `shoal plan validate` checks the training model against published runs.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/json.h"
#include "catalog/gpus.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/strings.h"
#include "plan/hardware.h"
#include "plan/planner.h"
#include "plan/report.h"
#include "plan/validation.h"
#include "trace/trace.h"

namespace shoal::cli {

namespace {

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot open", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Internal(fmt::format("{}: cannot write", path));
  return Status::Ok();
}

int RunValidate(const std::vector<std::string>& raw) {
  std::string data;
  bool json = false;
  bool all = false;
  CLI::App app{
      "Run the training model over published, measured runs (compiled/published_training_runs.csv "
      "and vtrain/ground_truth_single.csv in Shoal's data) and print predicted vs measured step "
      "time, the error of each row, the mean absolute error and the worst row.",
      "shoal plan validate"};
  app.add_option(
      "--data", data,
      "Shoal's data folder (default $SHOAL_DATA_DIR, else the installed share/shoal/data, else the "
      "source tree's data/; `shoal version` shows which)");
  app.add_flag("--json", json, "print JSON");
  app.add_flag("--all", all, "list every vTrain row, not only those off by more than 25%");
  if (int rc = ParseApp(app, raw, "shoal plan validate"); rc >= 0) return rc;
  data = DataDir(data);
  auto published_text = ReadText(data + "/compiled/published_training_runs.csv");
  if (!published_text.ok()) {
    std::cerr << "shoal plan validate: " << published_text.status().message()
              << " (give --data DIR)\n";
    return 1;
  }
  auto vtrain_text = ReadText(data + "/vtrain/ground_truth_single.csv");
  if (!vtrain_text.ok()) {
    std::cerr << "shoal plan validate: " << vtrain_text.status().message()
              << " (give --data DIR)\n";
    return 1;
  }
  auto published = plan::ValidatePublishedRuns(*published_text);
  if (!published.ok()) {
    std::cerr << "shoal plan validate: published_training_runs.csv: "
              << published.status().message() << "\n";
    return 1;
  }
  auto vtrain = plan::ValidateVtrain(*vtrain_text);
  if (!vtrain.ok()) {
    std::cerr << "shoal plan validate: ground_truth_single.csv: " << vtrain.status().message()
              << "\n";
    return 1;
  }
  plan::ValidationReport report;
  report.rows = std::move(*published);
  for (plan::ValidationRow& r : *vtrain)
    report.rows.push_back(std::move(r));
  // Serving anchors are informational: a missing file is not an error.
  if (auto anchors = ReadText(data + "/compiled/inference_anchors.csv"); anchors.ok()) {
    auto serving = plan::ValidateInferenceAnchors(*anchors);
    if (!serving.ok()) {
      std::cerr << "shoal plan validate: inference_anchors.csv: " << serving.status().message()
                << "\n";
      return 1;
    }
    report.serving = std::move(*serving);
  }
  report.Summarise();
  std::cout << (json ? plan::ValidationJson(report) : plan::ValidationText(report, all));
  return 0;
}

int RunGpus(const std::vector<std::string>& raw) {
  CLI::App app{"The GPU catalogue: peak figures, memory, links, power, price, sources.",
               "shoal plan gpus"};
  if (int rc = ParseApp(app, raw, "shoal plan gpus"); rc >= 0) return rc;
  std::printf("%-16s %-6s %8s %8s %8s %6s %7s %6s %6s %7s  %s\n", "model", "vendor", "bf16 TF",
              "fp8 TF", "mem GiB", "HBM TB/s", "link GB/s", "domain", "TDP W", "price",
              "node design");
  for (const catalog::GpuSpec& g : catalog::Gpus()) {
    const double price = plan::GpuPriceUsd(g);
    std::printf("%-16s %-6s %8.0f %8.0f %8lld %6.2f %7.0f %6d %6.0f %6.0fk  %s\n",
                std::string(g.model).c_str(), std::string(g.vendor).c_str(),
                g.PeakTflops(catalog::Precision::kBf16) > 0
                    ? g.PeakTflops(catalog::Precision::kBf16)
                    : g.PeakTflops(catalog::Precision::kFp16),
                g.fp8_tflops, static_cast<long long>(g.memory_mib / 1024), g.memory_bw_gbps / 1000,
                g.scaleup_bw_gbps, g.scaleup_domain, g.tdp_w, price / 1000,
                std::string(plan::NodeDesignFor(g).name).c_str());
  }
  std::printf("\nsources:\n");
  for (const catalog::GpuSpec& g : catalog::Gpus()) {
    std::printf("  %s: %s\n", std::string(g.model).c_str(), std::string(g.source).c_str());
  }
  return 0;
}

int RunModels(const std::vector<std::string>& raw) {
  CLI::App app{"The model presets.", "shoal plan models"};
  if (int rc = ParseApp(app, raw, "shoal plan models"); rc >= 0) return rc;
  for (const std::string& name : plan::ModelPresetNames()) {
    const plan::ModelShape m = *plan::FindModelPreset(name);
    std::printf(
        "%-16s %7.1fB  layers %3d  hidden %5d  heads %3d/%-3d  ffn %6d  vocab %6d  seq %5d  (%s)\n",
        name.c_str(), m.Params() / 1e9, m.layers, m.hidden, m.heads, m.KvHeads(), m.Ffn(), m.vocab,
        m.seq, m.source.c_str());
  }
  return 0;
}

// The flags that describe a workload without a file.
struct WorkloadFlags {
  std::string model;
  std::string params;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq = 0;
  std::string tokens;
  double days = 0;
  int gpus = 0;
  std::string precision = "bf16";
  std::string batch_tokens;
  std::string serve_tokens_per_s;
  double serve_requests_per_s = 0;
  int context = 2048, output = 256;
  double tpot_ms = 0, ttft_ms = 0;
  int general_gpus = 0;
  std::string general_trace;

  bool Any() const {
    return !model.empty() || !params.empty() || layers > 0 || !tokens.empty() || days > 0 ||
           gpus > 0 || !serve_tokens_per_s.empty() || serve_requests_per_s > 0 ||
           general_gpus > 0 || !general_trace.empty();
  }

  // A negative number is refused by name here: below it would read as
  // "not given".
  Status CheckSigns() const {
    for (auto [flag, value] : {std::pair<const char*, double>{"--days", days},
                               {"--gpus", gpus},
                               {"--layers", layers},
                               {"--hidden", hidden},
                               {"--heads", heads},
                               {"--kv-heads", kv_heads},
                               {"--ffn", ffn},
                               {"--vocab", vocab},
                               {"--seq", seq},
                               {"--serve-requests-per-s", serve_requests_per_s},
                               {"--context", context},
                               {"--output", output},
                               {"--tpot-ms", tpot_ms},
                               {"--ttft-ms", ttft_ms},
                               {"--general-gpus", general_gpus}}) {
      if (value >= 0) continue;
      const bool deadline = std::string_view(flag) == "--days";
      return InvalidArgument(
          fmt::format("{} {}: {}", flag, value,
                      deadline ? "a deadline cannot be negative" : "must not be negative"));
    }
    return Status::Ok();
  }

  // Builds the workload file these flags stand for, so that flags and files
  // go through one parser.
  std::string Toml() const {
    std::string shape;
    if (!model.empty()) shape += fmt::format("model = \"{}\"\n", model);
    if (!params.empty()) shape += fmt::format("params = \"{}\"\n", params);
    for (auto [key, value] : {std::pair{"layers", layers},
                              {"hidden", hidden},
                              {"heads", heads},
                              {"kv_heads", kv_heads},
                              {"ffn", ffn},
                              {"vocab", vocab},
                              {"seq", seq}}) {
      if (value > 0) shape += fmt::format("{} = {}\n", key, value);
    }
    std::string out = "name = \"command line\"\n";
    const bool serving = !serve_tokens_per_s.empty() || serve_requests_per_s > 0;
    if (!tokens.empty() || days > 0 || gpus > 0 ||
        (!serving && (!model.empty() || !params.empty()))) {
      out += "[[training]]\n" + shape;
      if (!tokens.empty()) out += fmt::format("tokens = \"{}\"\n", tokens);
      if (days > 0) out += fmt::format("days = {}\n", days);
      if (gpus > 0) out += fmt::format("gpus = {}\n", gpus);
      out += fmt::format("precision = \"{}\"\n", precision);
      if (!batch_tokens.empty()) out += fmt::format("global_batch_tokens = \"{}\"\n", batch_tokens);
    }
    if (serving) {
      out += "[[inference]]\n" + shape;
      if (!serve_tokens_per_s.empty())
        out += fmt::format("tokens_per_s = \"{}\"\n", serve_tokens_per_s);
      if (serve_requests_per_s > 0)
        out += fmt::format("requests_per_s = {}\n", serve_requests_per_s);
      out += fmt::format("context = {}\noutput = {}\n", context, output);
      if (tpot_ms > 0) out += fmt::format("tpot_ms = {}\n", tpot_ms);
      if (ttft_ms > 0) out += fmt::format("ttft_ms = {}\n", ttft_ms);
      out += fmt::format("precision = \"{}\"\n", precision);
    }
    if (general_gpus > 0 || !general_trace.empty()) {
      out += "[[general]]\n";
      if (general_gpus > 0) out += fmt::format("gpus = {}\n", general_gpus);
      if (!general_trace.empty()) out += fmt::format("trace = \"{}\"\n", general_trace);
    }
    return out;
  }
};

// Fills the GPU count of [[general]] shares that name a trace; a relative
// path is relative to the workload file's directory, else a trace shipped in
// Shoal's data ("microsoft-itp-2021/raw/cluster01.csv").
Status ResolveTraces(plan::Workload& w, const std::string& workload_file) {
  for (plan::GeneralWorkload& g : w.general) {
    if (g.gpus > 0 || g.from.empty() || g.from == "given") continue;
    std::filesystem::path path = g.from;
    if (path.is_relative() && !workload_file.empty()) {
      path = std::filesystem::path(workload_file).parent_path() / path;
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        if (std::string shipped = FindInData(g.from); shipped != g.from) path = shipped;
      }
    }
    auto tr = trace::LoadTrace(path.string());
    if (!tr.ok()) return tr.status();
    std::vector<plan::JobDemand> jobs;
    for (const trace::TraceJob& j : tr->jobs) {
      const int gpus = j.gpus > 0 ? j.gpus : j.nodes * j.gpus_per_node;
      jobs.push_back({ToSeconds(j.submit), ToSeconds(j.duration), gpus});
    }
    g.gpus = plan::GpusForDemand(jobs);
    if (g.gpus <= 0)
      return InvalidArgument(fmt::format("{}: the trace has no GPU jobs with run times", g.from));
    g.from = fmt::format("90th percentile of the GPUs held by {} ({} jobs)", g.from, jobs.size());
  }
  return Status::Ok();
}

}  // namespace

int RunPlan(const std::vector<std::string>& raw) {
  if (!raw.empty() && raw[0] == "validate") return RunValidate({raw.begin() + 1, raw.end()});
  if (!raw.empty() && raw[0] == "gpus") return RunGpus({raw.begin() + 1, raw.end()});
  if (!raw.empty() && raw[0] == "models") return RunModels({raw.begin() + 1, raw.end()});
  if (!raw.empty() && raw[0] == "mix") return RunPlanMix({raw.begin() + 1, raw.end()});

  std::string file;
  WorkloadFlags wf;
  std::vector<std::string> gpu_models;
  double budget = -1, rack_kw = -1, site_kw = -1, pue = -1, price_kwh = -1, oversub = -1;
  std::string cooling;
  bool json = false, all = false;
  std::string cluster_out, design_name;
  CLI::App app{
      "Size a GPU cluster for a workload: GPUs, parallel layout, nodes, racks, network fabric, "
      "power, "
      "cooling, cost and failures, one design per allowed GPU model, side by side.\n"
      "Give a workload file (docs/plan.md) or flags. Also: `shoal plan mix` (which GPU mix serves "
      "a trace best, by simulation), `shoal plan validate` (the model "
      "against "
      "published runs), `shoal plan gpus` (the catalogue), `shoal plan models` (presets).",
      "shoal plan"};
  app.add_option("workload", file, "workload file (TOML)");
  app.add_option("--model", wf.model, "model preset (shoal plan models), e.g. llama3-70b");
  app.add_option("--params", wf.params, "parameters, e.g. 70B (a GPT shape is derived)");
  app.add_option("--layers", wf.layers, "layers (custom shape)");
  app.add_option("--hidden", wf.hidden, "hidden size (custom shape)");
  app.add_option("--heads", wf.heads, "attention heads (custom shape)");
  app.add_option("--kv-heads", wf.kv_heads, "key/value heads (grouped-query attention)");
  app.add_option("--ffn", wf.ffn, "MLP size");
  app.add_option("--vocab", wf.vocab, "vocabulary");
  app.add_option("--seq", wf.seq, "sequence length");
  app.add_option("--tokens", wf.tokens, "training tokens, e.g. 15T");
  app.add_option("--days", wf.days, "training deadline in days");
  app.add_option("--gpus", wf.gpus, "training cluster size in GPUs (instead of --days)");
  app.add_option("--precision", wf.precision, "bf16, fp8 (training); bf16, fp8, fp4 (serving)");
  app.add_option("--global-batch-tokens", wf.batch_tokens,
                 "tokens per optimizer step (default 4Mi; 16Mi from 200B parameters)");
  app.add_option("--serve-tokens-per-s", wf.serve_tokens_per_s,
                 "inference: output tokens per second");
  app.add_option("--serve-requests-per-s", wf.serve_requests_per_s,
                 "inference: requests per second");
  app.add_option("--context", wf.context, "inference: prompt tokens per request");
  app.add_option("--output", wf.output, "inference: output tokens per request");
  app.add_option("--tpot-ms", wf.tpot_ms, "inference: time per output token limit (ms)");
  app.add_option("--ttft-ms", wf.ttft_ms, "inference: time to first token limit (ms)");
  app.add_option("--general-gpus", wf.general_gpus,
                 "a general share of N GPUs (analysis, fine-tuning)");
  app.add_option("--general-trace", wf.general_trace, "a general share sized from a job trace");
  app.add_option("--gpu", gpu_models,
                 "allowed GPU model (repeat or comma-separate; shoal plan gpus)")
      ->delimiter(',');
  app.add_option("--budget", budget, "capital budget in USD");
  app.add_option("--rack-kw", rack_kw, "power per rack in kW");
  app.add_option("--site-kw", site_kw, "facility power available in kW (PUE included)");
  app.add_option("--cooling", cooling, "air, liquid or any");
  app.add_option("--pue", pue, "power usage effectiveness");
  app.add_option("--price-kwh", price_kwh, "electricity price in USD per kWh");
  app.add_option("--oversubscription", oversub, "leaf oversubscription, e.g. 2 for 2:1");
  app.add_flag("--json", json, "print JSON");
  app.add_flag("--all", all, "print the details of every design, not only the recommended one");
  app.add_option("--cluster-out", cluster_out,
                 "write the design as a cluster file for `shoal sim` and `shoal up`");
  app.add_option("--design", design_name,
                 "the GPU model of the design to write (default: the recommended one)");
  if (int rc = ParseApp(app, raw, "shoal plan"); rc >= 0) return rc;
  // An error goes to stderr; with --json also to stdout, as the API's
  // error object, so that a script reading the plan reads why there is none.
  auto fail = [&json](int exit_code, const Status& s) {
    std::cerr << "shoal plan: " << s.message() << "\n";
    if (json) std::cout << api::ErrorBody(s).dump() << "\n";
    return exit_code;
  };
  if (Status s = wf.CheckSigns(); !s.ok()) return fail(2, s);

  if (file.empty() == !wf.Any()) {
    return fail(2, InvalidArgument(fmt::format(
                       "give a workload file or workload flags (--model, --tokens, --days, ...), "
                       "not {} (shoal plan --help)",
                       file.empty() ? "neither" : "both")));
  }
  std::string text;
  std::string origin = "flags";
  if (!file.empty()) {
    auto t = ReadText(file);
    if (!t.ok()) return fail(1, t.status());
    text = std::move(*t);
    origin = file;
  } else {
    text = wf.Toml();
  }
  auto parsed = plan::ParseWorkloadToml(text, origin);
  if (!parsed.ok()) return fail(file.empty() ? 2 : 1, parsed.status());
  plan::Workload w = std::move(*parsed);
  // Constraint flags override the file's.
  if (!gpu_models.empty()) w.gpu_models = gpu_models;
  if (budget >= 0) w.site.budget_usd = budget;
  if (rack_kw >= 0) w.site.rack_power_kw = rack_kw;
  if (site_kw >= 0) w.site.site_power_kw = site_kw;
  if (pue >= 0) w.site.pue = pue;
  if (price_kwh >= 0) w.site.electricity_usd_per_kwh = price_kwh;
  if (oversub >= 0) w.site.oversubscription = oversub;
  if (!cooling.empty()) {
    const std::string c = ToLower(cooling);
    if (c != "air" && c != "liquid" && c != "any")
      return fail(2, InvalidArgument("--cooling is air, liquid or any"));
    w.site.cooling = c == "air"      ? plan::Cooling::kAir
                     : c == "liquid" ? plan::Cooling::kLiquid
                                     : plan::Cooling::kAny;
  }
  if (w.site.pue < 1 || w.site.oversubscription < 1)
    return fail(2, InvalidArgument("PUE and oversubscription must be at least 1"));
  if (Status s = ResolveTraces(w, file); !s.ok()) return fail(1, s);
  auto result = plan::PlanWorkload(w);
  if (!result.ok()) {
    const bool usage = result.status().code() == StatusCode::kInvalidArgument;
    if (usage) return fail(2, result.status());
    return fail(1, Status(result.status().code(), "cannot plan: " + result.status().message()));
  }
  if (!cluster_out.empty()) {
    int pick = result->recommended;
    if (!design_name.empty()) {
      const catalog::GpuSpec* g = catalog::FindGpu(design_name);
      pick = -1;
      for (size_t i = 0; g != nullptr && i < result->designs.size(); ++i) {
        if (result->designs[i].gpu_model == g->model) pick = static_cast<int>(i);
      }
      if (pick < 0 || !result->designs[static_cast<size_t>(pick)].feasible) {
        return fail(2, InvalidArgument(fmt::format(
                           "--design {} is not a feasible design of this plan", design_name)));
      }
    }
    if (Status s = WriteText(cluster_out,
                             plan::ClusterToml(w, result->designs[static_cast<size_t>(pick)]));
        !s.ok()) {
      return fail(1, s);
    }
  }
  plan::ReportOptions opts;
  opts.all_details = all;
  std::cout << (json ? plan::PlanJson(w, *result) : plan::PlanText(w, *result, opts));
  if (!cluster_out.empty() && !json) std::cout << "\ncluster file: " << cluster_out << "\n";
  return 0;
}

}  // namespace shoal::cli
