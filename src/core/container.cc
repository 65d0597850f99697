// The checks on a job's container options (ContainerSpec in job.h). The
// agent checks again what only the node can (docs/containers.md): that the
// image is there, and that the job's user may reach each mount's source.
#include <fmt/format.h>

#include <algorithm>

#include "core/job.h"
#include "core/strings.h"

namespace shoal {
namespace {

constexpr size_t kMaxContainerEnv = 256;

bool HasControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// An absolute path with no "..", no commas or colons (the separators of
// --container-mounts) and no control characters.
Status CheckContainerPath(std::string_view what, std::string_view path) {
  if (path.empty() || path.front() != '/')
    return InvalidArgument(
        fmt::format("{} '{}' is not an absolute path", what, path.substr(0, 256)));
  if (path.size() > kMaxPathBytes || HasControl(path) || !IsValidUtf8(path) ||
      path.find_first_of(",:") != std::string_view::npos) {
    return InvalidArgument(fmt::format(
        "{} must be a path of at most {} bytes without commas, colons or control characters", what,
        kMaxPathBytes));
  }
  for (std::string_view part : Split(path, '/')) {
    if (part == "..") return InvalidArgument(fmt::format("{} '{}' climbs with '..'", what, path));
  }
  return Status::Ok();
}

Status CheckMount(const ContainerMount& m) {
  SHOAL_RETURN_IF_ERROR(CheckContainerPath("a container mount's source", m.source));
  SHOAL_RETURN_IF_ERROR(CheckContainerPath("a container mount's target", m.target));
  if (m.target == "/") return InvalidArgument("a container mount cannot cover the image's /");
  return Status::Ok();
}

Result<ContainerMount> ParseMount(std::string_view item) {
  const std::vector<std::string_view> parts = Split(item, ':');
  if (parts.size() > 3) {
    return InvalidArgument(
        fmt::format("container mount '{}' is not SRC[:DST[:ro|rw]]", item.substr(0, 256)));
  }
  ContainerMount m{std::string(parts[0]), std::string(parts.size() > 1 ? parts[1] : parts[0]),
                   false};
  if (parts.size() == 3) {
    if (parts[2] != "ro" && parts[2] != "rw") {
      return InvalidArgument(fmt::format("container mount '{}': the flag is ro or rw, not '{}'",
                                         item.substr(0, 256), parts[2].substr(0, 32)));
    }
    m.read_only = parts[2] == "ro";
  }
  SHOAL_RETURN_IF_ERROR(CheckMount(m));
  return m;
}

}  // namespace

std::vector<std::string> ParseContainerEnv(std::string_view text) {
  std::vector<std::string> names;
  for (std::string_view name : Split(text, ','))
    if (!Trim(name).empty()) names.emplace_back(Trim(name));
  return names;
}

Result<std::vector<ContainerMount>> ParseContainerMounts(std::string_view text) {
  std::vector<ContainerMount> mounts;
  for (std::string_view item : Split(text, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    SHOAL_ASSIGN_OR_RETURN(ContainerMount m, ParseMount(item));
    mounts.push_back(std::move(m));
  }
  if (mounts.size() > kMaxContainerMounts) {
    return InvalidArgument(
        fmt::format("{} container mounts; at most {}", mounts.size(), kMaxContainerMounts));
  }
  return mounts;
}

std::string FormatContainerMount(const ContainerMount& m) {
  std::string text = m.source;
  if (m.target != m.source || m.read_only) text += ":" + m.target;
  if (m.read_only) text += ":ro";
  return text;
}

Status ValidateContainer(const ContainerSpec& c) {
  if (c.image.empty()) {
    if (!c.mounts.empty() || !c.work_dir.empty() || !c.env.empty() || !c.mount_home) {
      return InvalidArgument(
          "--container-mounts, --container-workdir, --container-env and "
          "--no-container-mount-home need --container-image");
    }
    return Status::Ok();
  }
  if (c.image.size() > kMaxContainerImageBytes || HasControl(c.image) || !IsValidUtf8(c.image) ||
      c.image.front() == '-' || c.image.find(' ') != std::string::npos) {
    return InvalidArgument(fmt::format(
        "--container-image must be an image name or path of at most {} bytes, without spaces "
        "or control characters",
        kMaxContainerImageBytes));
  }
  if (c.mounts.size() > kMaxContainerMounts) {
    return InvalidArgument(
        fmt::format("{} container mounts; at most {}", c.mounts.size(), kMaxContainerMounts));
  }
  for (const ContainerMount& m : c.mounts)
    SHOAL_RETURN_IF_ERROR(CheckMount(m));
  if (!c.work_dir.empty())
    SHOAL_RETURN_IF_ERROR(CheckContainerPath("--container-workdir", c.work_dir));
  if (c.env.size() > kMaxContainerEnv) {
    return InvalidArgument(fmt::format("--container-env names {} variables; at most {}",
                                       c.env.size(), kMaxContainerEnv));
  }
  for (const std::string& name : c.env) {
    const bool ok = !name.empty() && name.size() <= kMaxNameBytes &&
                    std::all_of(name.begin(), name.end(),
                                [](char ch) {
                                  return ch == '_' || (ch >= '0' && ch <= '9') ||
                                         (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
                                }) &&
                    !(name.front() >= '0' && name.front() <= '9');
    if (!ok) {
      return InvalidArgument(
          fmt::format("--container-env: '{}' is not a variable name", name.substr(0, 64)));
    }
  }
  return Status::Ok();
}

}  // namespace shoal
