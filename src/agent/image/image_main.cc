// shoal-image: unpacks a container image into the node's image cache, run
// as root by a step's supervisor with the image file (opened with the job
// user's rights) as its stdin:
//
//   shoal-image unpack --cache DIR --key KEY --limit-mib N [--owner UID:GID] < IMAGE
//
// --owner: every file of the unpacked image is that user's (for a rootless
// runtime: unpack.h, ImageOwner).
// Exits 0 once the image is ready; 1 with one line "shoal-image: <why>" on
// stderr; 2 on bad arguments. Its own process because libarchive's
// extraction changes the working directory (agent/image/unpack.h), and so
// that the small shoal-step binary carries no libarchive.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "agent/image/unpack.h"
#include "core/strings.h"

namespace {

constexpr int64_t kMaxLimitMib = int64_t{1} << 30;  // 1 PiB: no overflow in bytes
constexpr int64_t kMaxId = 0xfffffffe;              // (uid_t)-1 means "unchanged"

int Usage() {
  std::fputs(
      "usage: shoal-image unpack --cache DIR --key KEY --limit-mib N [--owner UID:GID] < IMAGE\n",
      stderr);
  return 2;
}

int Fail(std::string message) {
  for (char& c : message) {
    if (c == '\n') c = ' ';  // one line, for the job's record
  }
  std::fprintf(stderr, "shoal-image: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc != 8 && argc != 10) || std::string_view(argv[1]) != "unpack") return Usage();
  std::string cache;
  std::string key;
  std::optional<int64_t> limit_mib;
  std::optional<shoal::agent::ImageOwner> owner;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string_view value = argv[i + 1];
    if (flag == "--cache") {
      cache = value;
    } else if (flag == "--key") {
      key = value;
    } else if (flag == "--limit-mib") {
      shoal::Result<int64_t> n = shoal::ParseInt(value);
      if (!n.ok() || *n < 0 || *n > kMaxLimitMib) return Usage();
      limit_mib = *n;
    } else if (flag == "--owner") {
      const size_t colon = value.find(':');
      shoal::Result<int64_t> uid = shoal::ParseInt(value.substr(0, colon));
      shoal::Result<int64_t> gid = shoal::ParseInt(
          colon == std::string_view::npos ? std::string_view() : value.substr(colon + 1));
      if (!uid.ok() || !gid.ok() || *uid < 0 || *gid < 0 || *uid > kMaxId || *gid > kMaxId)
        return Usage();
      owner = shoal::agent::ImageOwner{static_cast<uid_t>(*uid), static_cast<gid_t>(*gid)};
    } else {
      return Usage();
    }
  }
  if (cache.empty() || key.empty() || !limit_mib) return Usage();
  struct stat st {};
  if (::fstat(0, &st) != 0 || !S_ISREG(st.st_mode)) return Fail("stdin is not an image file");
  // Modes come from the image (ARCHIVE_EXTRACT_PERM); this is for the
  // folders created on the way.
  ::umask(022);
  shoal::Status status = shoal::agent::UnpackImage(0, cache, key, *limit_mib << 20, owner);
  if (!status.ok()) return Fail(status.message());
  return 0;
}
