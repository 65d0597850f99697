#include "agent/launch/cdi.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "core/files.h"

namespace shoal::agent {
namespace {

constexpr char kGpuKind[] = "nvidia.com/gpu";
constexpr size_t kMaxSpecBytes = 4 << 20;
// The OCI hook stages a CDI spec may name (OCI runtime spec, "POSIX-platform Hooks").
constexpr std::string_view kHookStages[] = {"prestart",       "createRuntime", "createContainer",
                                            "startContainer", "poststart",     "poststop"};

std::vector<std::string> Strings(const YAML::Node& node) {
  std::vector<std::string> out;
  if (!node) return out;
  if (!node.IsSequence()) throw YAML::Exception(node.Mark(), "expected a list of strings");
  for (const YAML::Node& item : node)
    out.push_back(item.as<std::string>());
  return out;
}

std::string Text(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  return value ? value.as<std::string>() : std::string();
}

CdiEdits ParseEdits(const YAML::Node& node) {
  CdiEdits edits;
  if (!node) return edits;
  edits.env = Strings(node["env"]);
  for (const YAML::Node& d : node["deviceNodes"]) {
    CdiEdits::DeviceNode device{Text(d, "path"), Text(d, "hostPath")};
    if (device.path.empty()) throw YAML::Exception(d.Mark(), "a device node without a path");
    edits.devices.push_back(std::move(device));
  }
  for (const YAML::Node& m : node["mounts"]) {
    CdiEdits::Mount mount{Text(m, "hostPath"), Text(m, "containerPath"), Strings(m["options"])};
    if (mount.host_path.empty() || mount.container_path.empty())
      throw YAML::Exception(m.Mark(), "a mount without hostPath or containerPath");
    edits.mounts.push_back(std::move(mount));
  }
  for (const YAML::Node& h : node["hooks"]) {
    CdiEdits::Hook hook{Text(h, "hookName"), Text(h, "path"), Strings(h["args"]),
                        Strings(h["env"])};
    if (std::find(std::begin(kHookStages), std::end(kHookStages), hook.stage) ==
            std::end(kHookStages) ||
        hook.path.empty()) {
      throw YAML::Exception(h.Mark(), "a hook needs a known hookName and a path");
    }
    edits.hooks.push_back(std::move(hook));
  }
  return edits;
}

void Append(CdiEdits& to, const CdiEdits& from) {
  to.devices.insert(to.devices.end(), from.devices.begin(), from.devices.end());
  to.mounts.insert(to.mounts.end(), from.mounts.begin(), from.mounts.end());
  to.env.insert(to.env.end(), from.env.begin(), from.env.end());
  to.hooks.insert(to.hooks.end(), from.hooks.begin(), from.hooks.end());
}

// A spec file the agent may trust: root's, writable by nobody else.
Result<std::string> ReadTrustedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return NotFound(ErrnoMessage(path));
  struct stat st {};
  const bool trusted = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
                       (st.st_mode & 022) == 0 && static_cast<size_t>(st.st_size) <= kMaxSpecBytes;
  ::close(fd);
  if (!trusted) {
    return FailedPrecondition(fmt::format(
        "{}: not a root-owned file that only root may write (its hooks run as root)", path));
  }
  return ReadFile(path);
}

}  // namespace

Result<CdiSpec> ParseCdiSpec(std::string_view text) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) return InvalidArgument("a CDI spec is a mapping");
    CdiSpec spec;
    spec.kind = Text(root, "kind");
    spec.common = ParseEdits(root["containerEdits"]);
    for (const YAML::Node& d : root["devices"]) {
      const std::string name = Text(d, "name");
      if (name.empty()) return InvalidArgument("a CDI device without a name");
      spec.devices.emplace_back(name, ParseEdits(d["containerEdits"]));
    }
    return spec;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("CDI spec: {}", e.what()));
  }
}

std::vector<std::string> CdiNamesOf(const StepGpu& gpu) {
  std::vector<std::string> names;
  if (gpu.fence.gi < 0) {
    names.push_back(std::to_string(gpu.fence.device));
  } else if (gpu.mig_index >= 0) {
    names.push_back(fmt::format("{}:{}", gpu.fence.device, gpu.mig_index));
  }
  if (!gpu.uuid.empty()) names.push_back(gpu.uuid);
  return names;
}

CdiEdits CdiEditsFor(const std::vector<CdiSpec>& specs, const std::vector<StepGpu>& gpus) {
  std::set<std::string> names;
  for (const StepGpu& g : gpus) {
    for (std::string& name : CdiNamesOf(g))
      names.insert(std::move(name));
  }
  CdiEdits edits;
  for (const CdiSpec& spec : specs) {
    if (spec.kind != kGpuKind) continue;
    bool used = false;
    for (const auto& [name, device] : spec.devices) {
      const bool wanted = names.contains(name);
      if (!wanted) continue;
      Append(edits, device);
      used = true;
    }
    if (used) Append(edits, spec.common);
  }
  return edits;
}

std::vector<CdiSpec> LoadCdiSpecs(const std::vector<std::string>& dirs,
                                  std::vector<std::string>& problems) {
  std::vector<CdiSpec> specs;
  for (const std::string& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json"))
        names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const std::string path = dir + "/" + name;
      Result<std::string> text = ReadTrustedFile(path);
      if (!text.ok()) {
        problems.push_back(text.status().message());
        continue;
      }
      Result<CdiSpec> spec = ParseCdiSpec(*text);
      if (!spec.ok()) {
        problems.push_back(path + ": " + spec.status().message());
        continue;
      }
      specs.push_back(std::move(*spec));
    }
  }
  return specs;
}

}  // namespace shoal::agent
