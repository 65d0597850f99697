#include "plan/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "catalog/gpus.h"
#include "catalog/mig.h"
#include "core/strings.h"

namespace shoal::plan {

namespace {

// A node group's layout for serving on one profile: as many instances of it
// as one GPU holds ("7x1g.10gb", "3x2g.20gb").
std::string MigFillLayout(std::string_view gpu_model, std::string_view profile) {
  for (const catalog::MigProfile& p : catalog::MigProfilesOf(gpu_model)) {
    if (p.name != profile) continue;
    const int n = std::min({p.max_count, catalog::kMigComputeSlices / p.compute_slices,
                            catalog::kMigMemoryEighths / p.memory_eighths});
    return fmt::format("{}x{}", n, p.name);
  }
  return "";
}

using Json = nlohmann::json;

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

std::string Usd(double usd) {
  if (usd >= 1e9) return fmt::format("${:.2f}B", usd / 1e9);
  if (usd >= 1e6) return fmt::format("${:.1f}M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("${:.0f}k", usd / 1e3);
  return fmt::format("${:.0f}", usd);
}

std::string Big(double n) {
  if (n >= 1e12) return fmt::format("{:.3g}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.3g}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.3g}M", n / 1e6);
  if (n >= 1e4) return fmt::format("{:.3g}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

// A table of rows by columns, the first column left-aligned.
class Table {
 public:
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string Render() const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line = "  ";
      for (size_t i = 0; i < r.size(); ++i) {
        line += i == 0 ? fmt::format("{:<{}}", r[i], width[i])
                       : fmt::format("  {:>{}}", r[i], width[i]);
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string DescribeWorkload(const Workload& w) {
  std::string out = fmt::format("Workload '{}'\n", w.name);
  for (const TrainingWorkload& t : w.training) {
    out += fmt::format(
        "  training '{}': {} ({:.1f}B parameters, {} layers, hidden {}, seq {}), {} tokens, {}, "
        "{}, "
        "global batch {} tokens\n",
        t.name, t.model.name, t.model.Params() / 1e9, t.model.layers, t.model.hidden, t.model.seq,
        Big(t.tokens),
        t.days ? fmt::format("deadline {} days", *t.days) : fmt::format("{} GPUs", *t.gpus),
        NumberFormatName(t.format), Big(t.global_batch_tokens));
  }
  for (const InferenceWorkload& i : w.inference) {
    const InferenceTarget& g = i.target;
    out += fmt::format(
        "  inference '{}': {} ({:.1f}B), {}, prompt {} + output {} tokens{}{}, {} bytes per "
        "weight\n",
        i.name, i.model.name, i.model.Params() / 1e9,
        g.output_tokens_per_s > 0 ? fmt::format("{} output tokens/s", Big(g.output_tokens_per_s))
                                  : fmt::format("{} requests/s", g.requests_per_s),
        g.context, g.output, g.tpot_ms > 0 ? fmt::format(", <= {} ms per token", g.tpot_ms) : "",
        g.ttft_ms > 0 ? fmt::format(", <= {} ms to first token", g.ttft_ms) : "", g.weight_bytes);
  }
  for (const GeneralWorkload& g : w.general) {
    out += fmt::format("  general '{}': {} GPUs ({})\n", g.name, g.gpus, g.from);
  }
  const SiteConstraints& s = w.site;
  out += fmt::format(
      "  constraints: budget {}, site {}, rack {}, cooling {}, PUE {:.2f}, ${:.3f}/kWh, "
      "oversubscription {:.1f}:1\n",
      s.budget_usd > 0 ? Usd(s.budget_usd) : "none",
      s.site_power_kw > 0 ? fmt::format("{:.0f} kW", s.site_power_kw) : "no limit",
      s.rack_power_kw > 0 ? fmt::format("{:.0f} kW", s.rack_power_kw) : "design default",
      CoolingName(s.cooling), s.pue, s.electricity_usd_per_kwh, s.oversubscription);
  return out;
}

// Whether "fastest" compares designs of one size: every feasible design
// that trains has the same GPU count.
bool FastestOfEqualSizes(const PlanResult& r) {
  int gpus = -1;
  for (const Design& d : r.designs) {
    if (!d.feasible || d.training.empty()) continue;
    if (gpus >= 0 && d.cluster.gpus != gpus) return false;
    gpus = d.cluster.gpus;
  }
  return true;
}

std::string SideBySide(const PlanResult& r) {
  Table t;
  std::vector<std::string> head = {"design"};
  for (const Design& d : r.designs)
    head.push_back(d.gpu_model);
  t.Row(head);
  auto row = [&](std::string name, auto cell) {
    std::vector<std::string> cells = {std::move(name)};
    for (const Design& d : r.designs)
      cells.push_back(d.feasible ? cell(d) : "-");
    t.Row(cells);
  };
  {
    std::vector<std::string> marks = {"mark"};
    for (const Design& d : r.designs) {
      std::string m = d.feasible ? "" : "cannot";
      if (d.cheapest) m += "cheapest";
      if (d.fastest) m += m.empty() ? "fastest" : ", fastest";
      marks.push_back(m.empty() ? "" : m);
    }
    t.Row(marks);
  }
  row("GPUs", [](const Design& d) { return fmt::format("{}", d.cluster.gpus); });
  row("nodes", [](const Design& d) {
    return fmt::format("{} x {}", d.cluster.nodes, d.cluster.node->name);
  });
  row("racks (kW each)", [](const Design& d) {
    return fmt::format("{} ({:.0f})", d.cluster.racks, d.cluster.rack_kw);
  });
  row("training days", [](const Design& d) {
    return d.training.empty() ? std::string("-") : fmt::format("{:.1f}", d.longest_training_days);
  });
  row("MFU", [](const Design& d) {
    std::vector<std::string> parts;
    for (const TrainingPlan& p : d.training)
      parts.push_back(fmt::format("{:.0f}%", 100 * p.step.mfu));
    return parts.empty() ? std::string("-") : Join(parts, " ");
  });
  row("inference GPUs", [](const Design& d) {
    int n = 0;
    for (const InferencePlan& p : d.inference)
      n += p.Gpus();
    return d.inference.empty() ? std::string("-") : fmt::format("{}", n);
  });
  row("switches (leaf/spine/core)", [](const Design& d) {
    return fmt::format("{}/{}/{}", d.cluster.fabric.leaves, d.cluster.fabric.spines,
                       d.cluster.fabric.cores);
  });
  row("IT power", [](const Design& d) { return fmt::format("{:.0f} kW", d.cluster.it_kw); });
  row("facility power",
      [](const Design& d) { return fmt::format("{:.0f} kW", d.cluster.facility_kw); });
  row("cooling", [](const Design& d) { return RackCoolingName(d.cluster); });
  row("capex", [](const Design& d) { return Usd(d.cluster.capex_usd); });
  row("energy", [](const Design& d) { return Usd(d.energy_usd); });
  row("capex + energy", [](const Design& d) { return Usd(d.total_usd); });
  row("failures per day",
      [](const Design& d) { return fmt::format("{:.2f}", d.cluster.failures_per_day); });
  std::string out = "Designs\n" + t.Render();
  for (const Design& d : r.designs) {
    if (!d.feasible) out += fmt::format("  {} cannot: {}\n", d.gpu_model, d.problem);
  }
  if (!FastestOfEqualSizes(r)) {
    out +=
        "  (fastest: the design whose training ends first, each on its own GPU count; the designs "
        "differ in size, so this is not a comparison of equal clusters)\n";
  }
  return out;
}

// Storage, the other networks and the management servers, in two lines.
std::string SupportText(const SupportDesign& s) {
  const SupportParts& p = DefaultSupportParts();
  std::string out = fmt::format(
      "  storage: {} appliance{} ({} GB/s read, {} GB/s write, {} TB each; set by {}): {:.0f} GB/s "
      "read, {:.0f} GB/s write, {:.0f} TB; the workloads read {:.2f} GB/s of data, write "
      "checkpoints at {:.0f} GB/s and keep {:.1f} TB\n",
      s.storage_units, s.storage_units == 1 ? "" : "s", p.storage_read_gbytes_s,
      p.storage_write_gbytes_s, p.storage_capacity_tb, s.storage_bound, s.storage_read_gbytes_s,
      s.storage_write_gbytes_s, s.storage_capacity_tb, s.need.read_gbytes_s, s.need.write_gbytes_s,
      s.need.capacity_tb);
  auto plural = [](int n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  out += fmt::format(
      "  support: converged Ethernet (storage, in-band management, users; 2 x 200G per node) "
      "{} leaf and {} spine; out-of-band 1G: {} for {} ports; {}{}; {}, {:.0f} kW\n",
      s.converged.leaves, s.converged.spines + s.converged.cores,
      plural(s.oob_switches, "switch", "switches"), s.oob_ports,
      plural(s.management_servers, "management server", "management servers"),
      s.ufm_appliances > 0 ? fmt::format(", {} UFM appliances", s.ufm_appliances) : "",
      plural(s.racks, "support rack", "support racks"), s.kw);
  return out;
}

Json SupportJson(const SupportDesign& s) {
  return Json{{"storage",
               {{"appliances", s.storage_units},
                {"set_by", s.storage_bound},
                {"read_gbytes_s", s.storage_read_gbytes_s},
                {"write_gbytes_s", s.storage_write_gbytes_s},
                {"capacity_tb", s.storage_capacity_tb},
                {"need",
                 {{"read_gbytes_s", s.need.read_gbytes_s},
                  {"write_gbytes_s", s.need.write_gbytes_s},
                  {"capacity_tb", s.need.capacity_tb}}}}},
              {"converged",
               {{"leaf", s.converged.leaves},
                {"spine", s.converged.spines},
                {"core", s.converged.cores},
                {"transceivers", s.converged.transceivers}}},
              {"out_of_band", {{"switches", s.oob_switches}, {"ports", s.oob_ports}}},
              {"management_servers", s.management_servers},
              {"ufm_appliances", s.ufm_appliances},
              {"racks", s.racks},
              {"kw", s.kw},
              {"source", DefaultSupportParts().source}};
}

std::string Details(const Design& d) {
  const ClusterDesign& c = d.cluster;
  const Fabric& f = c.fabric;
  std::string out = fmt::format("Design {}{}\n", d.gpu_model,
                                d.cheapest && d.fastest ? " (cheapest, fastest)"
                                : d.cheapest            ? " (cheapest)"
                                : d.fastest             ? " (fastest)"
                                                        : "");
  for (const TrainingPlan& p : d.training) {
    const StepEstimate& s = p.step;
    const MemoryEstimate& m = s.memory;
    out += fmt::format("  training '{}' ({}): {} GPUs, {}; {}\n", p.name, p.model, p.gpus,
                       p.layout.ToString(), p.sizing);
    if (const std::string uneven = p.layout.UnevenStages(p.layers); !uneven.empty())
      out += fmt::format("    pipeline: {}\n", uneven);
    out += fmt::format(
        "    step {:.2f} s for {} sequences ({} micro-batches): compute {:.2f}, TP comm {:.2f}, CP "
        "comm {:.2f}, "
        "pipeline bubble {:.2f}, p2p {:.2f}, DP exposed {:.2f}, optimizer {:.2f}, host-bound "
        "{:.2f} s\n",
        s.step_s, p.global_batch, s.micro_batches, s.compute_s, s.tp_comm_s, s.cp_comm_s,
        s.bubble_s, s.p2p_s, s.dp_exposed_s, s.optimizer_s, s.host_bound_s);
    out += fmt::format(
        "    {} tokens/s, MFU {:.1f}%, {:.1f} days of compute, {:.1f} days with failures "
        "(checkpoint every {:.0f} min to {:.0f} GB/s of storage, {:.1f}% lost)\n",
        Big(p.tokens_per_s), 100 * s.mfu, p.days, p.days_with_failures,
        p.checkpoints.interval_s / 60, p.checkpoints.write_gbytes_s, 100 * p.checkpoints.overhead);
    out += fmt::format(
        "    memory per GPU {:.1f} GiB: weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, "
        "activations {:.1f}, other {:.1f}\n",
        m.Total() / kGib, m.weights_bytes / kGib, m.gradients_bytes / kGib,
        m.optimizer_bytes / kGib, m.activations_bytes / kGib, m.other_bytes / kGib);
  }
  for (const InferencePlan& p : d.inference) {
    const InferenceEstimate& e = p.estimate;
    out += fmt::format(
        "  inference '{}' ({}): {} replicas of TP{} x batch {} = {} GPUs; {:.1f} ms per token "
        "({}-bound), {:.0f} ms prefill, {} tokens/s per replica; {:.1f} GiB weights + {:.1f} GiB "
        "KV per GPU\n",
        p.name, p.model, e.replicas, e.tp, e.batch, e.gpus, e.decode_step_s * 1e3,
        e.decode_memory_bound ? "memory" : "compute", e.prefill_s * 1e3,
        Big(e.tokens_per_s_per_replica), e.weights_bytes_per_gpu / kGib, e.kv_bytes_per_gpu / kGib);
    if (p.mig) {
      const InferenceEstimate& r = p.mig->replica;
      out += fmt::format(
          "    on MIG: {} replicas on {} slices x batch {} = {:.2f} of a GPU ({} GPU{} counted); "
          "{:.1f} ms per token, {} tokens/s per replica\n",
          p.mig->replicas, p.mig->profile, r.batch, p.mig->gpu_share, p.mig->gpus,
          p.mig->gpus == 1 ? "" : "s", r.decode_step_s * 1e3, Big(r.tokens_per_s_per_replica));
    }
  }
  for (const GeneralWorkload& g : d.general)
    out += fmt::format("  general '{}': {} GPUs ({})\n", g.name, g.gpus, g.from);
  out += fmt::format(
      "  nodes: {} x {} ({} GPUs each, {:.1f} kW max, {} x {:.0f}G NICs), {} per rack, {} GPU "
      "racks, "
      "{} network racks ({} per rack: {})\n",
      c.nodes, c.node->name, c.node->gpus, c.node_kw, c.node->compute_nics, c.node->nic_gbps,
      c.nodes_per_rack, c.racks, c.network_racks, c.nodes_per_rack, c.rack_why);
  const int off_fabric = c.nodes - c.fabric_nodes;
  if (c.fabric_nodes == 0) {
    out +=
        "  fabric: none: every node serves inference replicas that fit in it, and a replica never "
        "talks to another node\n";
  } else {
    out += fmt::format(
        "  fabric: rail-optimised fat tree, {} tier{}, {} scalable unit{} of {} nodes; {} leaf, "
        "{} spine, {} core switches (radix {}); {} NICs; cables {} node-leaf, {} leaf-spine, {} "
        "spine-core; {} transceivers; oversubscription {:.1f}:1; bisection {:.1f} Tb/s{}\n",
        f.tiers, f.tiers == 1 ? "" : "s", f.scalable_units, f.scalable_units == 1 ? "" : "s",
        f.nodes_per_su, f.leaves, f.spines, f.cores, DefaultNetworkParts().switch_ports, f.nics,
        f.node_leaf_cables, f.leaf_spine_cables, f.spine_core_cables, f.transceivers,
        f.oversubscription, f.bisection_gbps / 1000,
        off_fabric == 0 ? ""
                        : fmt::format("; {} serving node{} off it (their replicas fit in one node)",
                                      off_fabric, off_fabric == 1 ? "" : "s"));
  }
  out += fmt::format(
      "  power: GPUs {:.0f} kW of {:.0f} kW IT (network {:.0f} kW); {} PSUs per node ({} needed + "
      "{} spare) "
      "of {:.1f} kW; {:.1f} kW per rack; facility {:.0f} kW\n",
      c.gpu_kw, c.it_kw, c.network_kw, c.psus_per_node, c.psus_needed_per_node,
      c.psus_per_node - c.psus_needed_per_node, c.node->psu_w / 1000, c.rack_kw, c.facility_kw);
  out +=
      fmt::format("  cooling: {} ({}); {:.0f} kW = {:.0f} BTU/h per rack, {:.2f}M BTU/h in all\n",
                  RackCoolingName(c), c.cooling_why, c.rack_kw, c.rack_btu_h, c.total_btu_h / 1e6);
  out += SupportText(c.support);
  out += fmt::format(
      "  cost: GPUs {} ({} each: {}), servers {}, compute fabric {}, storage {}, other networks "
      "{}, management {}; capex {}; energy {} per year\n",
      Usd(c.gpus_usd), Usd(c.gpu_price_usd), c.gpu_price_source, Usd(c.servers_usd),
      Usd(c.network_usd), Usd(c.support.storage_usd), Usd(c.support.network_usd),
      Usd(c.support.servers_usd), Usd(c.capex_usd), Usd(c.energy_usd_per_year));
  out +=
      fmt::format("  reliability: {:.2f} failures per day, one every {:.1f} h (Llama 3's rate)\n",
                  c.failures_per_day, c.mtbf_hours);
  out += fmt::format("  sources: node: {}\n           achieved: {}\n", c.node->source,
                     AchievedFor(*c.gpu).source);
  return out;
}

Json LayoutJson(const Layout& l) {
  return Json{{"tp", l.tp},
              {"pp", l.pp},
              {"dp", l.dp},
              {"cp", l.cp},
              {"micro_batch", l.micro_batch},
              {"virtual_stages", l.virtual_stages},
              {"recompute", RecomputeName(l.recompute)},
              {"zero", l.zero},
              {"sequence_parallel", l.sequence_parallel}};
}

Json DesignJson(const Design& d) {
  Json j{{"gpu", d.gpu_model},
         {"feasible", d.feasible},
         {"cheapest", d.cheapest},
         {"fastest", d.fastest}};
  if (!d.feasible) {
    j["problem"] = d.problem;
    return j;
  }
  const ClusterDesign& c = d.cluster;
  const Fabric& f = c.fabric;
  Json training = Json::array();
  for (const TrainingPlan& p : d.training) {
    const StepEstimate& s = p.step;
    training.push_back(Json{{"name", p.name},
                            {"model", p.model},
                            {"gpus", p.gpus},
                            {"layout", LayoutJson(p.layout)},
                            {"global_batch_sequences", p.global_batch},
                            {"sizing", p.sizing},
                            {"step_s", s.step_s},
                            {"step_breakdown_s",
                             {{"compute", s.compute_s},
                              {"tp_comm", s.tp_comm_s},
                              {"cp_comm", s.cp_comm_s},
                              {"bubble", s.bubble_s},
                              {"p2p", s.p2p_s},
                              {"dp_exposed", s.dp_exposed_s},
                              {"optimizer", s.optimizer_s},
                              {"host_bound", s.host_bound_s}}},
                            {"micro_batches", s.micro_batches},
                            {"mfu", s.mfu},
                            {"model_flops_per_step", s.model_flops},
                            {"tokens_per_s", p.tokens_per_s},
                            {"days", p.days},
                            {"days_with_failures", p.days_with_failures},
                            {"checkpoint",
                             {{"bytes", p.checkpoints.checkpoint_bytes},
                              {"write_s", p.checkpoints.write_s},
                              {"write_gbytes_s", p.checkpoints.write_gbytes_s},
                              {"stall_s", p.checkpoints.stall_s},
                              {"restart_s", p.checkpoints.restart_s},
                              {"interval_s", p.checkpoints.interval_s},
                              {"overhead", p.checkpoints.overhead}}},
                            {"memory_gib",
                             {{"weights", s.memory.weights_bytes / kGib},
                              {"gradients", s.memory.gradients_bytes / kGib},
                              {"optimizer", s.memory.optimizer_bytes / kGib},
                              {"activations", s.memory.activations_bytes / kGib},
                              {"other", s.memory.other_bytes / kGib},
                              {"total", s.memory.Total() / kGib}}}});
  }
  Json inference = Json::array();
  for (const InferencePlan& p : d.inference) {
    const InferenceEstimate& e = p.estimate;
    inference.push_back(Json{{"name", p.name},
                             {"model", p.model},
                             {"tp", e.tp},
                             {"batch", e.batch},
                             {"replicas", e.replicas},
                             {"gpus", e.gpus},
                             {"tpot_ms", e.decode_step_s * 1e3},
                             {"ttft_ms", e.prefill_s * 1e3},
                             {"tokens_per_s_per_replica", e.tokens_per_s_per_replica},
                             {"memory_bound", e.decode_memory_bound},
                             {"weights_gib_per_gpu", e.weights_bytes_per_gpu / kGib},
                             {"kv_gib_per_gpu", e.kv_bytes_per_gpu / kGib}});
    if (p.mig) {
      inference.back()["mig"] =
          Json{{"profile", p.mig->profile},
               {"replicas", p.mig->replicas},
               {"gpus", p.mig->gpus},
               {"gpu_share", p.mig->gpu_share},
               {"batch", p.mig->replica.batch},
               {"tpot_ms", p.mig->replica.decode_step_s * 1e3},
               {"tokens_per_s_per_replica", p.mig->replica.tokens_per_s_per_replica}};
    }
  }
  Json general = Json::array();
  for (const GeneralWorkload& g : d.general)
    general.push_back(Json{{"name", g.name}, {"gpus", g.gpus}, {"from", g.from}});
  j["training"] = training;
  j["inference"] = inference;
  j["general"] = general;
  j["gpus"] = c.gpus;
  j["nodes"] = {
      {"count", c.nodes},        {"design", c.node->name},       {"gpus_each", c.node->gpus},
      {"max_kw", c.node_kw},     {"per_rack", c.nodes_per_rack}, {"per_rack_why", c.rack_why},
      {"source", c.node->source}};
  j["racks"] = {{"gpu", c.racks},
                {"network", c.network_racks},
                {"support", c.support.racks},
                {"kw_each", c.rack_kw}};
  j["fabric"] = {{"tiers", f.tiers},
                 {"nodes", c.fabric_nodes},
                 {"scalable_units", f.scalable_units},
                 {"nodes_per_su", f.nodes_per_su},
                 {"leaf", f.leaves},
                 {"spine", f.spines},
                 {"core", f.cores},
                 {"nics", f.nics},
                 {"cables",
                  {{"node_leaf", f.node_leaf_cables},
                   {"leaf_spine", f.leaf_spine_cables},
                   {"spine_core", f.spine_core_cables}}},
                 {"transceivers", f.transceivers},
                 {"oversubscription", f.oversubscription},
                 {"bisection_gbps", f.bisection_gbps}};
  j["power_kw"] = {{"gpus", c.gpu_kw},        {"node", c.node_kw}, {"network", c.network_kw},
                   {"support", c.support_kw}, {"it", c.it_kw},     {"facility", c.facility_kw},
                   {"rack", c.rack_kw}};
  j["psus"] = {{"per_node", c.psus_per_node},
               {"needed", c.psus_needed_per_node},
               {"rating_w", c.node->psu_w}};
  j["cooling"] = {{"kind", CoolingName(c.cooling)},
                  {"rear_door", c.rear_door},
                  {"why", c.cooling_why},
                  {"rack_btu_h", c.rack_btu_h},
                  {"total_btu_h", c.total_btu_h}};
  j["support"] = SupportJson(c.support);
  j["cost_usd"] = {{"gpus", c.gpus_usd},
                   {"gpu_each", c.gpu_price_usd},
                   {"gpu_price_source", c.gpu_price_source},
                   {"servers", c.servers_usd},
                   {"network", c.network_usd},
                   {"storage", c.support.storage_usd},
                   {"support_network", c.support.network_usd},
                   {"management", c.support.servers_usd},
                   {"capex", c.capex_usd},
                   {"energy_per_year", c.energy_usd_per_year},
                   {"energy", d.energy_usd},
                   {"total", d.total_usd}};
  j["reliability"] = {{"failures_per_day", c.failures_per_day}, {"mtbf_hours", c.mtbf_hours}};
  j["longest_training_days"] = d.longest_training_days;
  return j;
}

std::string TomlString(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out + "\"";
}

}  // namespace

std::string PlanText(const Workload& workload, const PlanResult& result,
                     const ReportOptions& options) {
  std::string out = DescribeWorkload(workload) + "\n" + SideBySide(result);
  for (size_t i = 0; i < result.designs.size(); ++i) {
    const Design& d = result.designs[i];
    if (!d.feasible) continue;
    if (options.all_details || static_cast<int>(i) == result.recommended) out += "\n" + Details(d);
  }
  return out;
}

std::string PlanJson(const Workload& workload, const PlanResult& result) {
  Json designs = Json::array();
  for (const Design& d : result.designs)
    designs.push_back(DesignJson(d));
  Json j{{"workload", workload.name}, {"designs", designs}};
  j["fastest_of_equal_sizes"] = FastestOfEqualSizes(result);
  j["recommended"] = result.recommended >= 0
                         ? Json(result.designs[static_cast<size_t>(result.recommended)].gpu_model)
                         : Json(nullptr);
  return j.dump(2) + "\n";
}

std::string ClusterToml(const Workload& workload, const Design& d) {
  const ClusterDesign& c = d.cluster;
  const NodeDesign& node = *c.node;
  const Fabric& f = c.fabric;
  std::string out = fmt::format(
      "# Planned by `shoal plan` for workload '{}': {} x {} in {} nodes of {}.\n"
      "# Nodes sit under the fabric's scalable units ({} nodes each); labels say which workload\n"
      "# each group serves.\n",
      workload.name, c.gpus, c.gpu->model, c.nodes, node.name, f.nodes_per_su);
  out += fmt::format("name = {}\n\n",
                     TomlString(fmt::format("plan-{}-{}", ToLower(c.gpu->model), c.gpus)));
  // A scalable unit is one leaf group; spine groups of radix/2 leaves hold
  // (radix/2)/rails units in a three-tier tree, all of them in two tiers.
  const int su_per_spine =
      f.tiers == 3
          ? std::max(1, DefaultNetworkParts().switch_ports / 2 / std::max(1, node.compute_nics))
          : std::max(1, f.scalable_units);
  // Without a fabric (serving alone) no node is nearer another.
  const int per_leaf = f.nodes_per_su > 0 ? std::min(f.nodes_per_su, c.nodes) : c.nodes;
  out += fmt::format("[network]\nnodes_per_leaf = {}\nleaves_per_spine = {}\n",
                     std::max(1, per_leaf), su_per_spine);
  struct Group {
    std::string label;
    int gpus;
    std::string mig = {};  // each GPU's MIG layout; empty: whole GPUs
  };
  std::vector<Group> groups;
  for (const TrainingPlan& p : d.training)
    groups.push_back({"train", p.gpus});
  for (const InferencePlan& p : d.inference) {
    groups.push_back({"serve", p.Gpus()});
    if (p.mig) groups.back().mig = MigFillLayout(c.gpu->model, p.mig->profile);
  }
  for (const GeneralWorkload& g : d.general)
    groups.push_back({"general", g.gpus});
  int assigned = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    int nodes = (groups[i].gpus + node.gpus - 1) / node.gpus;
    // The last group takes the nodes that whole racks add.
    if (i + 1 == groups.size()) nodes = c.nodes - assigned;
    if (nodes <= 0) continue;
    assigned += nodes;
    out += fmt::format("\n[[nodes]]\ncount = {}\n", nodes);
    if (!node.profile.empty()) {
      out += fmt::format("profile = {}\n", TomlString(node.profile));
    } else {
      out += fmt::format(
          "gpus = {}\ngpu_model = {}\ngpu_memory = \"{}M\"\nnvlink_island_size = {}\n"
          "numa_nodes = 2\ncpus = {}\nmemory = \"{}G\"\n",
          node.gpus, TomlString(c.gpu->model), c.gpu->memory_mib,
          std::min(node.gpus, node.nvlink_domain_gpus), node.cpus, node.memory_gib);
    }
    out += fmt::format("prefix = {}\nlabels = [{}]\n",
                       TomlString(fmt::format("{}{}-", groups[i].label, i + 1)),
                       TomlString(groups[i].label));
    if (!groups[i].mig.empty()) out += fmt::format("mig = {}\n", TomlString(groups[i].mig));
  }
  return out;
}

namespace {

// The validation targets of issue 18, on every compared row with the runs'
// own layouts: a mean absolute error of at most 5 %, no row over 12 %.
constexpr double kValidationTargetMae = 0.05;
constexpr double kValidationTargetWorst = 0.12;

bool TargetsMet(const ValidationReport& r) {
  return r.all.mae <= kValidationTargetMae && r.all.worst <= kValidationTargetWorst;
}

}  // namespace

std::string ValidationText(const ValidationReport& r, bool every_row) {
  std::string out =
      "Model vs published runs: predicted and measured step time per row (error = predicted / "
      "measured - 1)\n";
  Table t;
  t.Row({"source", "run", "layout (reported + searched)", "predicted s", "measured s", "error",
         "searched"});
  std::string skipped, unsearched;
  for (const ValidationRow& row : r.rows) {
    if (!row.searched_failure.empty()) {
      unsearched += fmt::format("  {} {} (line {}): {}\n", row.group, row.label, row.line,
                                row.searched_failure);
    }
    if (row.skipped) {
      skipped +=
          fmt::format("  {} {} (line {}): {}\n", row.group, row.label, row.line, row.skip_reason);
      continue;
    }
    if (row.group == "vTrain" && !every_row && std::abs(row.error) <= 0.25) continue;
    t.Row({row.group, row.label, row.layout, fmt::format("{:.3f}", row.predicted_s),
           fmt::format("{:.3f}", row.measured_s), fmt::format("{:+.1f}%", 100 * row.error),
           row.searched_s > 0 ? fmt::format("{:+.1f}%", 100 * row.searched_error) : "-"});
  }
  out += t.Render();
  out +=
      "  (searched: the error with the planner's own layout for the run, its software and "
      "precision kept)\n";
  if (!every_row) out += "  (vTrain rows within 25% are not listed; --all lists every row)\n";
  if (!skipped.empty()) out += "\nNot compared:\n" + skipped;
  if (!unsearched.empty()) out += "\nNo layout of the planner's own:\n" + unsearched;
  out += fmt::format("\nSummary (targets: MAE <= {:.0f}%, no row worse than {:.0f}%)\n",
                     100 * kValidationTargetMae, 100 * kValidationTargetWorst);
  Table s;
  s.Row({"group", "rows", "MAE", "worst",
         fmt::format("rows > {:.0f}%", 100 * kValidationTargetWorst)});
  auto over = [&](const std::string& group) {
    int n = 0;
    for (const ValidationRow& row : r.rows) {
      if (!row.skipped && std::abs(row.error) > kValidationTargetWorst &&
          (group == "all rows" || row.group == group ||
           (group == "published runs" && row.group != "vTrain"))) {
        ++n;
      }
    }
    return n;
  };
  std::vector<ValidationGroup> groups = r.groups;
  groups.push_back(r.published);
  groups.push_back(r.all);
  for (const ValidationGroup& g : groups) {
    s.Row({g.group, fmt::format("{}", g.rows), fmt::format("{:.1f}%", 100 * g.mae),
           fmt::format("{:.1f}%", 100 * g.worst), fmt::format("{}", over(g.group))});
  }
  out += s.Render();
  if (r.published_searched.rows > 0) {
    out += fmt::format(
        "published runs with the planner's own layouts (software and precision as the runs'): "
        "{} rows, MAE {:.1f}%, worst {:.1f}%\n",
        r.published_searched.rows, 100 * r.published_searched.mae,
        100 * r.published_searched.worst);
  }
  if (r.worst >= 0) {
    const ValidationRow& w = r.rows[static_cast<size_t>(r.worst)];
    out += fmt::format(
        "\nworst row: {} {} (line {}): predicted {:.3f} s, measured {:.3f} s, {:+.1f}%\n", w.group,
        w.label, w.line, w.predicted_s, w.measured_s, 100 * w.error);
  }
  const bool met = TargetsMet(r);
  out += fmt::format("targets: {}\n", met ? "met" : "NOT met (see docs/plan.md, Validation)");
  if (!r.serving.empty()) {
    out +=
        "\nServing throughput vs TensorRT-LLM (informational; output tokens/s at maximum "
        "throughput)\n";
    Table v;
    v.Row({"run", "model batch", "predicted tok/s", "measured tok/s", "error"});
    for (const ValidationRow& row : r.serving) {
      if (row.skipped) continue;
      v.Row({row.label, row.layout, fmt::format("{:.0f}", row.predicted_s),
             fmt::format("{:.0f}", row.measured_s), fmt::format("{:+.1f}%", 100 * row.error)});
    }
    out += v.Render();
    out += fmt::format("  {} rows, MAE {:.1f}%, worst {:.1f}%\n", r.serving_summary.rows,
                       100 * r.serving_summary.mae, 100 * r.serving_summary.worst);
  }
  return out;
}

std::string ValidationJson(const ValidationReport& r) {
  auto row_json = [](const ValidationRow& row) {
    Json j{{"group", row.group},
           {"label", row.label},
           {"line", row.line},
           {"gpu", row.gpu},
           {"gpus", row.gpus}};
    if (row.skipped) {
      j["skipped"] = row.skip_reason;
    } else {
      j["layout"] = row.layout;
      j["predicted_s"] = row.predicted_s;
      j["measured_s"] = row.measured_s;
      j["measured_how"] = row.measured_how;
      j["error"] = row.error;
      if (!row.searched_failure.empty()) j["searched_failure"] = row.searched_failure;
      if (row.searched_s > 0) {
        j["searched_layout"] = row.searched_layout;
        j["searched_s"] = row.searched_s;
        j["searched_error"] = row.searched_error;
      }
    }
    return j;
  };
  Json rows = Json::array();
  for (const ValidationRow& row : r.rows)
    rows.push_back(row_json(row));
  Json serving = Json::array();
  for (const ValidationRow& row : r.serving)
    serving.push_back(row_json(row));
  auto group = [](const ValidationGroup& g) {
    return Json{{"group", g.group}, {"rows", g.rows}, {"mae", g.mae}, {"worst", g.worst}};
  };
  Json groups = Json::array();
  for (const ValidationGroup& g : r.groups)
    groups.push_back(group(g));
  Json j{{"rows", rows},
         {"groups", groups},
         {"published", group(r.published)},
         {"published_searched", group(r.published_searched)},
         {"vtrain", group(r.vtrain)},
         {"all", group(r.all)}};
  j["worst"] = r.worst >= 0 ? Json(r.rows[static_cast<size_t>(r.worst)].label) : Json(nullptr);
  j["serving"] = serving;
  j["serving_summary"] = group(r.serving_summary);
  j["targets_met"] = TargetsMet(r);
  return j.dump(2) + "\n";
}

}  // namespace shoal::plan
