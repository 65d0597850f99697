#include "server/config.h"

#include <fmt/format.h>

#include "config/server_file.h"
#include "core/log.h"
#include "core/strings.h"
#include "sched/policy.h"

namespace shoal::server {

Status ApplyServerSetting(const std::string& key, const std::string& value, ServerOptions& o) {
  SHOAL_ASSIGN_OR_RETURN(const bool logs, log::ApplySetting(key, value, o.log));
  if (logs) return Status::Ok();
  auto duration = [&](Duration* out) -> Status {
    auto d = ParseDuration(value);
    if (!d.ok()) return InvalidArgument(fmt::format("{}: {}", key, d.status().message()));
    *out = *d;
    return Status::Ok();
  };
  if (key == "listen") {
    o.listen = value;
  } else if (key == "state_dir") {
    o.state_dir = value;
  } else if (key == "socket") {
    o.socket = value;
  } else if (key == "policy") {
    auto p = sched::Policy::Preset(value);
    if (!p.ok()) return InvalidArgument(fmt::format("policy: {}", p.status().message()));
    auto created = sched::Policy::Create(*p, sched::BuiltinRegistry(), {.simulation = false});
    if (!created.ok())
      return InvalidArgument(fmt::format("policy: {}", created.status().message()));
    o.controller.policy = value;
  } else if (key == "node_timeout") {
    return duration(&o.controller.node_timeout);
  } else if (key == "max_heartbeat_rate") {
    auto n = ParseInt(value);
    if (!n.ok() || *n < 10 || *n > 1000000)
      return InvalidArgument("max_heartbeat_rate: heartbeats per second, 10 to 1000000");
    o.controller.max_heartbeat_rate = static_cast<int>(*n);
  } else if (key == "kill_grace") {
    return duration(&o.controller.kill_grace);
  } else if (key == "launch_grace") {
    return duration(&o.controller.launch_grace);
  } else if (key == "usage_half_life") {
    return duration(&o.controller.usage_half_life);
  } else if (key == "finished_retention") {
    return duration(&o.controller.finished_retention);
  } else if (key == "rendezvous_ports") {
    // FIRST-LAST: the ports jobs get as MASTER_PORT and TF_CONFIG's.
    const size_t dash = value.find('-');
    auto first = ParseInt(value.substr(0, dash));
    auto last = dash == std::string::npos ? first : ParseInt(value.substr(dash + 1));
    if (!first.ok() || !last.ok() || *first < 1024 || *last > 65535 || *last - *first < 15) {
      return InvalidArgument(
          "rendezvous_ports: FIRST-LAST, at least 16 ports within 1024-65535 (default "
          "20000-32767)");
    }
    o.controller.rendezvous_first = static_cast<int>(*first);
    o.controller.rendezvous_last = static_cast<int>(*last);
  } else if (key == "max_body") {
    auto mib = ParseMemoryMib(value);
    if (!mib.ok() || *mib <= 0) return InvalidArgument("max_body: a size such as 1M");
    o.max_body_bytes = static_cast<size_t>(*mib) * 1024 * 1024;
  } else if (key == "http_threads") {
    auto n = ParseInt(value);
    if (!n.ok() || *n < 2 || *n > 256) return InvalidArgument("http_threads: 2 to 256");
    o.http_threads = static_cast<int>(*n);
  } else if (key == "max_connections" || key == "connections_per_address") {
    auto n = ParseInt(value);
    if (!n.ok() || *n < 16 || *n > 1000000)
      return InvalidArgument(fmt::format("{}: 16 to 1000000 connections", key));
    (key == "max_connections" ? o.max_connections : o.connections_per_address) =
        static_cast<int>(*n);
  } else if (key == "max_queue") {
    auto n = ParseInt(value);
    if (!n.ok() || *n < 1) return InvalidArgument("max_queue: a positive number");
    o.loop.max_queue = static_cast<size_t>(*n);
  } else if (key == "metrics_public") {
    // The file's booleans arrive as "true" and "false"; 1 and 0 are accepted too.
    if (value != "true" && value != "false" && value != "1" && value != "0") {
      return InvalidArgument("metrics_public: true or false");
    }
    o.metrics_public = value == "true" || value == "1";
  } else if (key == "metrics_per_gpu") {
    if (value != "true" && value != "false" && value != "1" && value != "0") {
      return InvalidArgument("metrics_per_gpu: true or false");
    }
    o.metrics_per_gpu = value == "true" || value == "1";
  } else if (key == "postgres") {
    // Empty: the embedded SQLite store in state_dir.
    o.postgres = value;
  } else if (key == "sync") {
    if (value != "full" && value != "normal") return InvalidArgument("sync: full or normal");
    o.sqlite_full_sync = value == "full";
  } else if (key == "tls") {
    if (value != "true" && value != "false" && value != "1" && value != "0")
      return InvalidArgument("tls: true or false (false: plain HTTP, on loopback only)");
    o.tls.enabled = value == "true" || value == "1";
  } else if (key == "tls_names") {
    o.tls.names.clear();
    for (std::string_view name : Split(value, ',')) {
      if (!Trim(name).empty()) o.tls.names.emplace_back(Trim(name));
    }
  } else if (key == "mail_program") {
    if (value != "none" && (value.empty() || value.front() != '/'))
      return InvalidArgument("mail_program: an absolute path, or none");
    o.mail_program = value;
  } else if (key == "node_cert_days") {
    auto n = ParseInt(value);
    if (!n.ok() || *n < 1 || *n > 3650) return InvalidArgument("node_cert_days: 1 to 3650");
    o.tls.node_cert_days = static_cast<int>(*n);
  } else {
    return InvalidArgument(fmt::format(
        "unknown server setting '{}' (listen, state_dir, socket, policy, node_timeout, "
        "max_heartbeat_rate, kill_grace, launch_grace, rendezvous_ports, "
        "usage_half_life, finished_retention, max_body, http_threads, max_connections, "
        "connections_per_address, max_queue, sync, postgres, log_level, log_format, "
        "metrics_public, metrics_per_gpu, tls, tls_names, node_cert_days, mail_program)",
        key));
  }
  return Status::Ok();
}

Status LoadServerConfig(const std::string& path, ServerOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(config::ServerFile file, config::LoadServerFile(path));
  for (const auto& [key, value] : file.server) {
    SHOAL_RETURN_IF_ERROR(ApplyServerSetting(key, value, options).WithContext(path));
  }
  options.controller.partitions = file.cluster.partitions;
  options.controller.accounts = file.cluster.accounts;
  options.controller.power_budgets = file.cluster.power_budgets;
  options.controller.power = file.cluster.power;
  return Status::Ok();
}

}  // namespace shoal::server
