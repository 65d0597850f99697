#include "agent/launch/image_store.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/job.h"

namespace shoal::agent {
namespace {

using Json = nlohmann::json;

Status CheckReference(std::string_view reference) {
  if (reference.empty()) return InvalidArgument("the container image is empty");
  if (reference.size() > kMaxContainerImageBytes) {
    return InvalidArgument(
        fmt::format("the container image name is over {} bytes", kMaxContainerImageBytes));
  }
  for (char c : reference) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return InvalidArgument("the container image name holds a control character");
    }
  }
  // Each '/'-separated component; a name in the image folder keeps its
  // slashes only as '+', but ".." has no business in either form.
  size_t start = 0;
  while (start <= reference.size()) {
    size_t end = reference.find('/', start);
    if (end == std::string_view::npos) end = reference.size();
    if (reference.substr(start, end - start) == "..") {
      return InvalidArgument(fmt::format("container image '{}' has a '..' component", reference));
    }
    start = end + 1;
  }
  return Status::Ok();
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// FNV-1a, 64 bits: a name, not a defence (the key only ever comes from our
// own fstat of a file the user could open).
void Mix(uint64_t& hash, uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xff;
    hash *= 0x100000001b3ULL;
  }
}

}  // namespace

Result<std::string> ImageFileFor(std::string_view reference, const std::string& image_dir) {
  SHOAL_RETURN_IF_ERROR(CheckReference(reference));
  if (reference.front() == '/') return std::string(reference);
  if (image_dir.empty()) {
    return FailedPrecondition(
        fmt::format("container image '{}': this node has no image folder configured; "
                    "name the image file by its absolute path",
                    reference));
  }
  std::string_view rest = reference;
  if (rest.starts_with("docker://")) rest.remove_prefix(9);
  std::string name(rest);
  for (char& c : name) {
    if (c == '#' || c == '/' || c == ':') c = '+';
  }
  if (name.empty() || name == "." || name == "..") {
    return InvalidArgument(fmt::format("'{}' names no container image", reference));
  }
  const std::string base = image_dir + "/" + name;
  for (const char* suffix : {"", ".tar", ".tar.gz", ".tgz"}) {
    std::string path = base + suffix;
    if (IsRegularFile(path)) return path;
  }
  return NotFound(
      fmt::format("image '{}' is not on this node: Shoal does not pull images; put it at {}.tar",
                  reference, base));
}

std::string ImageKey(const struct stat& st) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  Mix(hash, static_cast<uint64_t>(st.st_dev));
  Mix(hash, static_cast<uint64_t>(st.st_ino));
  Mix(hash, static_cast<uint64_t>(st.st_size));
  Mix(hash, static_cast<uint64_t>(st.st_mtim.tv_sec));
  Mix(hash, static_cast<uint64_t>(st.st_mtim.tv_nsec));
  // A user can set a file's modification time, never its change time: a
  // file made to look like another user's image (its inode reused, its size
  // and times copied from a stat) still gets a key of its own.
  Mix(hash, static_cast<uint64_t>(st.st_ctim.tv_sec));
  Mix(hash, static_cast<uint64_t>(st.st_ctim.tv_nsec));
  Mix(hash, static_cast<uint64_t>(st.st_uid));
  return fmt::format("{:016x}", hash);
}

ImagePaths PathsOf(const std::string& cache_dir, const std::string& key) {
  ImagePaths p;
  p.dir = cache_dir + "/" + key;
  p.rootfs = p.dir + "/rootfs";
  p.config = p.dir + "/config.json";
  p.size = p.dir + "/size";
  p.ready = p.dir + "/ready";
  p.lock = p.dir + ".lock";
  p.unpack_lock = p.dir + ".unpack";
  return p;
}

Result<ImageConfig> ParseImageConfig(std::string_view json) {
  // Our own file, read back: nlohmann's exceptions stop here.
  try {
    const Json j = Json::parse(json);
    ImageConfig config;
    config.env = j.value("env", std::vector<std::string>());
    config.work_dir = j.value("work_dir", std::string());
    return config;
  } catch (const Json::exception& e) {
    return Internal(fmt::format("unreadable image config: {}", e.what()));
  }
}

std::string ImageConfigJson(const ImageConfig& config) {
  // Replace, not throw, on a byte that is not UTF-8: an image's env is the
  // image maker's text.
  return Json{{"env", config.env}, {"work_dir", config.work_dir}}.dump(
      -1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace shoal::agent
