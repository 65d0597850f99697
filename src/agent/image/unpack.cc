#include "agent/image/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "agent/image/tree.h"
#include "agent/launch/image_store.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

using Json = nlohmann::json;

// Limits on what an archive may make us hold or do.
constexpr size_t kMaxSmallBlobBytes = 4 << 20;  // index.json, a manifest, a config
constexpr size_t kMaxLayers = 1000;
constexpr int kMaxIndexDepth = 4;
constexpr size_t kReadBlockBytes = 64 << 10;
constexpr size_t kMaxKeyBytes = 64;

// No ARCHIVE_EXTRACT_UNLINK: with it libarchive replaces a symbolic link in
// the middle of a path by a directory, silently; without it such an entry
// fails ("Cannot extract through symlink"), and a file in the way is still
// unlinked, never written through (libarchive creates files O_EXCL).
// Extended attributes (file capabilities) are not restored.
constexpr int kExtractFlags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER |
                              ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                              ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;

struct ReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ShaFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using ReadArchive = std::unique_ptr<archive, ReadFree>;
using WriteArchive = std::unique_ptr<archive, WriteFree>;

std::string ArchiveError(archive* a) {
  const char* s = archive_error_string(a);
  return s != nullptr ? s : "unknown archive error";
}

Status ResourceExhausted(std::string message) {
  return Status(StatusCode::kResourceExhausted, std::move(message));
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// ---- Reading archives.

// Compressed tars: no archive_read_support_filter_all, which would run an
// external program (lrzip, grzip, lzop) on a stranger's archive, as root.
void SupportTar(archive* a) {
  archive_read_support_filter_gzip(a);
  archive_read_support_filter_bzip2(a);
  archive_read_support_filter_xz(a);
  archive_read_support_filter_zstd(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_empty(a);
}

// The next entry: false at the end. A warning (a name in another charset)
// is not an error.
Result<bool> NextEntry(archive* a, archive_entry** entry) {
  const int r = archive_read_next_header(a, entry);
  if (r == ARCHIVE_EOF) return false;
  if (r == ARCHIVE_OK || r == ARCHIVE_WARN) return true;
  return InvalidArgument(ArchiveError(a));
}

std::string_view EntryName(archive_entry* entry) {
  const char* name = archive_entry_pathname(entry);
  return name != nullptr ? name : "";
}

// "./blobs/sha256/x/" -> "blobs/sha256/x"; the root folder is "".
std::string_view Normalized(std::string_view name) {
  while (true) {
    if (name.starts_with("./")) {
      name.remove_prefix(2);
    } else if (name.starts_with("/")) {
      name.remove_prefix(1);
    } else {
      break;
    }
  }
  while (name.ends_with("/"))
    name.remove_suffix(1);
  return name == "." ? std::string_view() : name;
}

Result<ReadArchive> OpenOuter(int fd) {
  if (::lseek(fd, 0, SEEK_SET) != 0) return Internal(ErrnoMessage("seek the image file"));
  ReadArchive a(archive_read_new());
  SupportTar(a.get());
  if (archive_read_open_fd(a.get(), fd, kReadBlockBytes) != ARCHIVE_OK)
    return InvalidArgument(ArchiveError(a.get()));
  return a;
}

// One file of an OCI archive, streamed from its tar entry. With a digest,
// every byte read goes through SHA-256 and Finish checks the sum: cheap
// next to decompressing, and a damaged layer fails here, not in a job.
class ArchiveFile {
 public:
  static Result<std::unique_ptr<ArchiveFile>> Open(int fd, const std::string& name,
                                                   const std::string& sha256_hex) {
    auto file = std::make_unique<ArchiveFile>(name, sha256_hex);
    SHOAL_ASSIGN_OR_RETURN(file->outer_, OpenOuter(fd));
    archive_entry* entry = nullptr;
    while (true) {
      SHOAL_ASSIGN_OR_RETURN(bool more, NextEntry(file->outer_.get(), &entry));
      if (!more) return InvalidArgument(fmt::format("{} is not in the archive", name));
      if (Normalized(EntryName(entry)) == name && archive_entry_filetype(entry) == AE_IFREG) break;
    }
    return file;
  }

  // The next bytes of the file (empty at its end), valid until the next call.
  Result<std::string_view> Read() {
    const la_ssize_t n = archive_read_data(outer_.get(), buffer_.data(), buffer_.size());
    if (n < 0) return InvalidArgument(fmt::format("{}: {}", name_, ArchiveError(outer_.get())));
    if (sha_) EVP_DigestUpdate(sha_.get(), buffer_.data(), static_cast<size_t>(n));
    return std::string_view(buffer_.data(), static_cast<size_t>(n));
  }

  // Reads what nobody read (a layer's padding) and checks the digest.
  Status Finish() {
    while (true) {
      SHOAL_ASSIGN_OR_RETURN(std::string_view bytes, Read());
      if (bytes.empty()) break;
    }
    if (!sha_) return Status::Ok();
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(sha_.get(), sum, &size);
    std::string hex;
    for (unsigned int i = 0; i < size; ++i)
      hex += fmt::format("{:02x}", sum[i]);
    if (hex != hex_) {
      return InvalidArgument(
          fmt::format("{} does not match its digest: the archive is damaged", name_));
    }
    return Status::Ok();
  }

  // libarchive's read callback, for a layer read from inside the archive.
  static la_ssize_t Callback(archive* inner, void* self, const void** buffer) {
    Result<std::string_view> bytes = static_cast<ArchiveFile*>(self)->Read();
    if (!bytes.ok()) {
      archive_set_error(inner, EIO, "%s", bytes.status().message().c_str());
      return ARCHIVE_FATAL;
    }
    *buffer = bytes->data();
    return static_cast<la_ssize_t>(bytes->size());
  }

  ArchiveFile(std::string name, std::string hex)
      : name_(std::move(name)), hex_(std::move(hex)), buffer_(kReadBlockBytes) {
    if (!hex_.empty()) {
      sha_.reset(EVP_MD_CTX_new());
      EVP_DigestInit_ex(sha_.get(), EVP_sha256(), nullptr);
    }
  }

 private:
  std::string name_;
  std::string hex_;
  std::vector<char> buffer_;
  ReadArchive outer_;
  std::unique_ptr<EVP_MD_CTX, ShaFree> sha_;
};

// "sha256:<64 hex>" -> "<64 hex>": the only digest OCI archives use, and
// a name that cannot climb out of blobs/.
Result<std::string> BlobHex(const std::string& digest) {
  constexpr std::string_view kPrefix = "sha256:";
  const bool hex =
      std::all_of(digest.begin() + std::min(digest.size(), kPrefix.size()), digest.end(),
                  [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (!digest.starts_with(kPrefix) || digest.size() != kPrefix.size() + 64 || !hex)
    return InvalidArgument(fmt::format("unsupported digest '{}'", digest));
  return digest.substr(kPrefix.size());
}

Result<std::string> ReadSmall(int fd, const std::string& name, const std::string& hex) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ArchiveFile> file, ArchiveFile::Open(fd, name, hex));
  std::string out;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(std::string_view bytes, file->Read());
    if (bytes.empty()) break;
    out.append(bytes);
    if (out.size() > kMaxSmallBlobBytes)
      return InvalidArgument(fmt::format("{} is over {} bytes", name, kMaxSmallBlobBytes));
  }
  SHOAL_RETURN_IF_ERROR(file->Finish());
  return out;
}

Result<std::string> ReadBlob(int fd, const std::string& digest, std::string_view what) {
  Result<std::string> hex = BlobHex(digest);
  if (!hex.ok()) return hex.status().WithContext(what);
  Result<std::string> text = ReadSmall(fd, "blobs/sha256/" + *hex, *hex);
  if (!text.ok()) return text.status().WithContext(what);
  return text;
}

// ---- OCI: index.json -> (image index ->) manifest -> config and layers.

// An image maker's JSON is input: nlohmann's exceptions (a field missing or
// of the wrong type) become a Status here.
template <typename T, typename F>
Result<T> FromJson(std::string_view text, std::string_view what, F&& read) {
  try {
    Result<T> out = read(Json::parse(text));
    if (!out.ok()) return out.status().WithContext(what);
    return out;
  } catch (const Json::exception& e) {
    return InvalidArgument(fmt::format("{}: {}", what, e.what()));
  }
}

constexpr std::string_view HostArchitecture() {
#if defined(__aarch64__)
  return "arm64";
#elif defined(__powerpc64__)
  return "ppc64le";
#else
  return "amd64";
#endif
}

// A manifest, or an index that names the one to follow (this machine's
// platform, else its first).
struct Manifest {
  bool is_index = false;
  std::string next;
  std::string config;
  std::vector<std::string> layers;
};

Result<Manifest> ParseManifest(const Json& j) {
  Manifest m;
  if (j.contains("manifests")) {
    const Json& list = j.at("manifests");
    if (!list.is_array() || list.empty()) return InvalidArgument("the index lists no manifests");
    const Json* pick = &list.front();
    for (const Json& d : list) {
      const Json platform = d.value("platform", Json::object());
      if (platform.value("os", "") == "linux" &&
          platform.value("architecture", "") == HostArchitecture()) {
        pick = &d;
        break;
      }
    }
    m.is_index = true;
    m.next = pick->at("digest").get<std::string>();
    return m;
  }
  if (!j.contains("layers")) return InvalidArgument("neither an image manifest nor an index");
  m.config = j.at("config").at("digest").get<std::string>();
  for (const Json& layer : j.at("layers"))
    m.layers.push_back(layer.at("digest").get<std::string>());
  if (m.layers.size() > kMaxLayers)
    return InvalidArgument(fmt::format("over {} layers", kMaxLayers));
  return m;
}

Result<Manifest> LoadManifest(int fd) {
  Result<std::string> text = ReadSmall(fd, "index.json", "");
  if (!text.ok()) return text.status().WithContext("image index");
  SHOAL_ASSIGN_OR_RETURN(Manifest m, FromJson<Manifest>(*text, "image index", ParseManifest));
  if (!m.is_index) return InvalidArgument("image index: index.json is not an index");
  for (int depth = 0; depth < kMaxIndexDepth; ++depth) {
    SHOAL_ASSIGN_OR_RETURN(text, ReadBlob(fd, m.next, "image manifest"));
    SHOAL_ASSIGN_OR_RETURN(m, FromJson<Manifest>(*text, "image manifest", ParseManifest));
    if (!m.is_index) return m;
  }
  return InvalidArgument("image index: indexes nested too deep");
}

Result<ImageConfig> LoadConfig(int fd, const std::string& digest) {
  SHOAL_ASSIGN_OR_RETURN(std::string text, ReadBlob(fd, digest, "image config"));
  return FromJson<ImageConfig>(text, "image config", [](const Json& j) -> Result<ImageConfig> {
    ImageConfig out;
    // "config" and its fields may be absent or null.
    auto c = j.find("config");
    if (c == j.end() || !c->is_object()) return out;
    if (auto env = c->find("Env"); env != c->end() && env->is_array())
      out.env = env->get<std::vector<std::string>>();
    if (auto dir = c->find("WorkingDir"); dir != c->end() && dir->is_string())
      out.work_dir = dir->get<std::string>();
    return out;
  });
}

// ---- Layers.

// ".wh.NAME" deletes NAME of the lower layers in its folder, ".wh..wh..opq"
// everything there (an empty name).
struct Whiteout {
  std::vector<std::string> dir;
  std::string name;
};

Result<std::optional<Whiteout>> WhiteoutOf(std::string_view path) {
  std::vector<std::string> parts;
  for (std::string_view part : Split(path, '/')) {
    if (!part.empty() && part != ".") parts.emplace_back(part);
  }
  if (parts.empty() || !parts.back().starts_with(".wh.")) return std::optional<Whiteout>();
  const std::string base = parts.back();
  parts.pop_back();
  Whiteout w{parts, ""};
  if (base != ".wh..wh..opq") {
    // aufs' own bookkeeping (.wh..wh.plnk and the like) deletes nothing.
    if (base.starts_with(".wh..wh.")) return std::optional<Whiteout>();
    w.name = base.substr(4);
  }
  const bool climbs = std::find(parts.begin(), parts.end(), "..") != parts.end();
  if (climbs || (base != ".wh..wh..opq" && (w.name.empty() || w.name == "." || w.name == "..")))
    return InvalidArgument(fmt::format("refused whiteout '{}'", path));
  return std::optional<Whiteout>(std::move(w));
}

// Deletes what `w` names under `rootfd`. Each folder on the way is opened
// O_NOFOLLOW: a whiteout under a symbolic link (or under nothing) deletes
// nothing, so it never reaches outside the rootfs.
Status ApplyWhiteout(int rootfd, const Whiteout& w) {
  UniqueFd held;
  int dir = rootfd;
  for (const std::string& part : w.dir) {
    UniqueFd next(::openat(dir, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return Status::Ok();
      return Internal(ErrnoMessage("open " + part));
    }
    held = std::move(next);
    dir = held.get();
  }
  return w.name.empty() ? RemoveChildren(dir) : RemoveAt(dir, w.name);
}

// Pass 1 over a layer: its whiteouts, whatever their place in it.
Result<std::vector<Whiteout>> CollectWhiteouts(archive* in) {
  std::vector<Whiteout> out;
  archive_entry* entry = nullptr;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(bool more, NextEntry(in, &entry));
    if (!more) return out;
    SHOAL_ASSIGN_OR_RETURN(std::optional<Whiteout> w, WhiteoutOf(EntryName(entry)));
    if (w) out.push_back(std::move(*w));
  }
}

struct Extraction {
  bool oci = false;  // whiteout entries are instructions, not files
  int64_t written_bytes = 0;
  int64_t limit_bytes = 0;
  std::optional<ImageOwner> owner;  // every entry's owner, else the image's
};

// Whether an entry is left out: device nodes, FIFOs and sockets (the runtime
// makes the container's /dev; a node here would only open a door to the
// host's devices) and, in an OCI layer, whiteouts.
bool LeftOut(archive_entry* entry, const Extraction& x) {
  const mode_t type = archive_entry_filetype(entry);
  if (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFIFO || type == AE_IFSOCK) return true;
  if (!x.oci) return false;
  const std::string_view name = Normalized(EntryName(entry));
  return name.substr(name.rfind('/') + 1).starts_with(".wh.");
}

// Leading '/' dropped (as GNU tar does) rather than refused. A hard link
// gets no data: in a tar its data is its target's, and writing some would
// write through the link.
void Sanitize(archive_entry* entry) {
  if (const char* name = archive_entry_pathname(entry); name != nullptr && name[0] == '/') {
    std::string_view rest = Normalized(name);
    archive_entry_copy_pathname(entry, rest.empty() ? "." : std::string(rest).c_str());
  }
  if (const char* link = archive_entry_hardlink(entry); link != nullptr) {
    if (link[0] == '/') archive_entry_copy_hardlink(entry, std::string(Normalized(link)).c_str());
    archive_entry_set_size(entry, 0);
  }
}

Status CopyData(archive* in, archive* disk, std::string_view name) {
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  while (true) {
    const int r = archive_read_data_block(in, &block, &size, &offset);
    if (r == ARCHIVE_EOF) return Status::Ok();
    if (r < ARCHIVE_WARN) return InvalidArgument(fmt::format("'{}': {}", name, ArchiveError(in)));
    if (archive_write_data_block(disk, block, size, offset) < ARCHIVE_WARN)
      return Internal(fmt::format("'{}': {}", name, ArchiveError(disk)));
  }
}

Status ExtractEntry(archive* in, archive_entry* entry, archive* disk, Extraction& x) {
  Sanitize(entry);
  if (x.owner) {
    archive_entry_set_uid(entry, x.owner->uid);
    archive_entry_set_gid(entry, x.owner->gid);
  }
  const std::string name(EntryName(entry));
  if (archive_entry_filetype(entry) == AE_IFREG) {
    x.written_bytes += archive_entry_size(entry);
    if (x.limit_bytes > 0 && x.written_bytes > x.limit_bytes) {
      return ResourceExhausted(
          fmt::format("the image is larger than the image cache ({} MiB)", x.limit_bytes >> 20));
    }
  }
  // ARCHIVE_FAILED is a refused entry ('..', a path through a symbolic
  // link): the whole image is refused, not run without it.
  if (archive_write_header(disk, entry) < ARCHIVE_WARN)
    return InvalidArgument(fmt::format("'{}': {}", name, ArchiveError(disk)));
  if (archive_entry_size(entry) > 0) SHOAL_RETURN_IF_ERROR(CopyData(in, disk, name));
  if (archive_write_finish_entry(disk) < ARCHIVE_WARN)
    return Internal(fmt::format("'{}': {}", name, ArchiveError(disk)));
  return Status::Ok();
}

// Pass 2: every entry but those left out, into the working directory (the
// rootfs: libarchive resolves names and hard links against it).
Status ExtractEntries(archive* in, Extraction& x) {
  WriteArchive disk(archive_write_disk_new());
  // No archive_write_disk_set_standard_lookup: owners stay numeric, as the
  // image recorded them, whatever this node's user names.
  archive_write_disk_set_options(disk.get(), kExtractFlags);
  archive_entry* entry = nullptr;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(bool more, NextEntry(in, &entry));
    if (!more) break;
    if (LeftOut(entry, x)) continue;
    SHOAL_RETURN_IF_ERROR(ExtractEntry(in, entry, disk.get(), x));
  }
  // Sets the folders' modes and times, deferred until their files are in.
  if (archive_write_close(disk.get()) != ARCHIVE_OK) return Internal(ArchiveError(disk.get()));
  return Status::Ok();
}

// A layer blob as a tar (maybe compressed), read through `file`.
Result<ReadArchive> OpenLayer(ArchiveFile* file) {
  ReadArchive in(archive_read_new());
  SupportTar(in.get());
  if (archive_read_open(in.get(), file, nullptr, &ArchiveFile::Callback, nullptr) != ARCHIVE_OK)
    return InvalidArgument(ArchiveError(in.get()));
  return in;
}

// One layer, in two passes over its blob, so that the order of entries in
// it does not matter: its whiteouts delete from the layers below (once the
// blob's digest is checked), then its files go in.
Status ApplyLayer(int fd, const std::string& digest, int rootfd, Extraction& x) {
  SHOAL_ASSIGN_OR_RETURN(std::string hex, BlobHex(digest));
  const std::string name = "blobs/sha256/" + hex;
  std::vector<Whiteout> whiteouts;
  {
    SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ArchiveFile> file, ArchiveFile::Open(fd, name, hex));
    SHOAL_ASSIGN_OR_RETURN(ReadArchive in, OpenLayer(file.get()));
    SHOAL_ASSIGN_OR_RETURN(whiteouts, CollectWhiteouts(in.get()));
    SHOAL_RETURN_IF_ERROR(file->Finish());
  }
  for (const Whiteout& w : whiteouts)
    SHOAL_RETURN_IF_ERROR(ApplyWhiteout(rootfd, w));
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ArchiveFile> file, ArchiveFile::Open(fd, name, hex));
  SHOAL_ASSIGN_OR_RETURN(ReadArchive in, OpenLayer(file.get()));
  SHOAL_RETURN_IF_ERROR(ExtractEntries(in.get(), x));
  return file->Finish();
}

// ---- The image as a whole.

enum class ImageKind { kOci, kRootfs };

bool IsOciName(std::string_view name) {
  return name.empty() || name == "oci-layout" || name == "index.json" || name == "manifest.json" ||
         name == "repositories" || name == "blobs" || name.starts_with("blobs/");
}

// `docker save` before Docker 25: a folder of 64 hex digits a layer.
bool IsDockerSaveName(std::string_view name) {
  std::string_view first = name.substr(0, name.find('/'));
  if (first.ends_with(".json")) first.remove_suffix(5);
  return first.size() == 64 && std::all_of(first.begin(), first.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// An OCI archive holds only OCI names, index.json and oci-layout among
// them; the first other name makes it a rootfs tarball (so that a big one
// is not read to its end just to tell).
Result<ImageKind> DetectKind(int fd) {
  SHOAL_ASSIGN_OR_RETURN(ReadArchive a, OpenOuter(fd));
  bool index = false;
  bool layout = false;
  archive_entry* entry = nullptr;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(bool more, NextEntry(a.get(), &entry));
    if (!more) break;
    const std::string_view name = Normalized(EntryName(entry));
    index = index || name == "index.json";
    layout = layout || name == "oci-layout";
    if (IsOciName(name)) continue;
    if (IsDockerSaveName(name)) {
      return InvalidArgument(
          "a `docker save` archive of Docker before 25, which Shoal does not read; save "
          "the image with `podman save --format oci-archive` or `skopeo copy` to oci-archive:");
    }
    return ImageKind::kRootfs;
  }
  if (index && layout) return ImageKind::kOci;
  return InvalidArgument(
      "neither an OCI image archive (index.json and oci-layout) nor a root filesystem");
}

// Changes the working directory for as long as it lives.
class WorkingDirectory {
 public:
  static Result<std::unique_ptr<WorkingDirectory>> Enter(int dirfd) {
    UniqueFd saved(::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (saved.get() < 0) return Internal(ErrnoMessage("open the working directory"));
    if (::fchdir(dirfd) != 0) return Internal(ErrnoMessage("enter the new rootfs"));
    return std::make_unique<WorkingDirectory>(std::move(saved));
  }
  ~WorkingDirectory() {
    // Back where the process was; nothing to do if that folder is gone.
    if (::fchdir(saved_.get()) != 0) return;
  }
  explicit WorkingDirectory(UniqueFd saved) : saved_(std::move(saved)) {}

 private:
  UniqueFd saved_;
};

Status UnpackOci(int fd, int rootfd, Extraction& x, ImageConfig& config) {
  x.oci = true;
  SHOAL_ASSIGN_OR_RETURN(Manifest manifest, LoadManifest(fd));
  SHOAL_ASSIGN_OR_RETURN(config, LoadConfig(fd, manifest.config));
  const size_t count = manifest.layers.size();
  for (size_t i = 0; i < count; ++i) {
    Status status = ApplyLayer(fd, manifest.layers[i], rootfd, x);
    if (!status.ok()) return status.WithContext(fmt::format("image layer {} of {}", i + 1, count));
  }
  return Status::Ok();
}

Status UnpackRootfs(int fd, Extraction& x) {
  Status status = [&]() -> Status {
    SHOAL_ASSIGN_OR_RETURN(ReadArchive in, OpenOuter(fd));
    return ExtractEntries(in.get(), x);
  }();
  return status.WithContext("image layer 1 of 1");
}

// Unpacks into `dir` (rootfs, config.json, size).
Status UnpackInto(int fd, const std::string& dir, int64_t limit_bytes,
                  std::optional<ImageOwner> owner) {
  const std::string rootfs = dir + "/rootfs";
  if (::mkdir(rootfs.c_str(), 0755) != 0) return Internal(ErrnoMessage("mkdir " + rootfs));
  UniqueFd root(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.get() < 0) return Internal(ErrnoMessage("open " + rootfs));
  if (owner && ::fchown(root.get(), owner->uid, owner->gid) != 0)
    return Internal(ErrnoMessage("chown " + rootfs));
  Result<ImageKind> kind = DetectKind(fd);
  if (!kind.ok()) return kind.status().WithContext("not an image");
  Extraction x{.limit_bytes = limit_bytes, .owner = owner};
  ImageConfig config;
  {
    SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<WorkingDirectory> cwd,
                           WorkingDirectory::Enter(root.get()));
    SHOAL_RETURN_IF_ERROR(*kind == ImageKind::kOci ? UnpackOci(fd, root.get(), x, config)
                                                   : UnpackRootfs(fd, x));
  }
  SHOAL_RETURN_IF_ERROR(WriteFile(dir + "/config.json", ImageConfigJson(config), 0644));
  SHOAL_ASSIGN_OR_RETURN(int64_t bytes, TreeBytes(dir));
  return WriteFile(dir + "/size", fmt::format("{}\n", bytes), 0644);
}

// Another unpacker's remains for this key: its temporary folders (it died;
// we hold the unpack lock), or a folder renamed but never marked ready.
Status RemoveLeftovers(const std::string& cache_dir, const std::string& key) {
  UniqueFd dir(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return Internal(ErrnoMessage("open " + cache_dir));
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir.get()));
  for (const std::string& name : names) {
    if (name == key || name.starts_with(key + ".tmp-"))
      SHOAL_RETURN_IF_ERROR(RemoveAt(dir.get(), name).WithContext("remove " + name));
  }
  return Status::Ok();
}

// Makes the unpacked image at `tmp` the ready image: durable first (one
// syncfs, once per image), then renamed, then marked.
Status Publish(const std::string& tmp, const ImagePaths& paths) {
  UniqueFd dir(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return Internal(ErrnoMessage("open " + tmp));
  if (::syncfs(dir.get()) != 0) return Internal(ErrnoMessage("syncfs " + tmp));
  if (::rename(tmp.c_str(), paths.dir.c_str()) != 0) return Internal(ErrnoMessage("rename " + tmp));
  return WriteFileDurably(paths.ready, "", 0644);
}

Status CheckKey(const std::string& key) {
  const bool plain = std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '-';
  });
  if (key.empty() || key.size() > kMaxKeyBytes || !plain)
    return InvalidArgument(fmt::format("bad image key '{}'", key));
  return Status::Ok();
}

// ---- Eviction.

struct CachedImage {
  std::string key;
  int64_t bytes = 0;
  timespec used{};
};

Result<std::vector<CachedImage>> ReadyImages(const std::string& cache_dir) {
  std::vector<CachedImage> out;
  UniqueFd dir(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    if (errno == ENOENT) return out;
    return Internal(ErrnoMessage("open " + cache_dir));
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir.get()));
  for (const std::string& name : names) {
    struct stat st {};
    // Keys have no '.': that leaves out the lock files and temporary folders.
    if (name.find('.') != std::string::npos) continue;
    if (::fstatat(dir.get(), (name + "/ready").c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    CachedImage image{name, 0, st.st_mtim};
    // A size file that is missing or damaged counts as 0: the image can still go.
    if (Result<std::string> size = ReadFile(PathsOf(cache_dir, name).size); size.ok()) {
      if (Result<int64_t> bytes = ParseInt(Trim(*size)); bytes.ok()) image.bytes = *bytes;
    }
    out.push_back(std::move(image));
  }
  std::sort(out.begin(), out.end(), [](const CachedImage& a, const CachedImage& b) {
    if (a.used.tv_sec != b.used.tv_sec) return a.used.tv_sec < b.used.tv_sec;
    return a.used.tv_nsec < b.used.tv_nsec;
  });
  return out;
}

// Removes one image unless a job holds it or it is being unpacked; false
// when it stays. Unmarked first, then renamed out of the way, so that no
// one ever finds half of it ready.
Result<bool> EvictOne(const std::string& cache_dir, const std::string& key) {
  const ImagePaths paths = PathsOf(cache_dir, key);
  std::vector<UniqueFd> locks;  // released on return, once the image is gone
  for (const std::string* lock : {&paths.lock, &paths.unpack_lock}) {
    Result<UniqueFd> held = LockFile(*lock, LOCK_EX | LOCK_NB);
    if (!held.ok() && held.status().code() == StatusCode::kUnavailable) return false;
    if (!held.ok()) return held.status();
    locks.push_back(std::move(held).value());
  }
  if (::unlink(paths.ready.c_str()) != 0) {
    if (errno == ENOENT) return false;
    return Internal(ErrnoMessage("unlink " + paths.ready));
  }
  const std::string doomed = fmt::format("{}.tmp-{}", paths.dir, ::getpid());
  if (::rename(paths.dir.c_str(), doomed.c_str()) != 0)
    return Internal(ErrnoMessage("rename " + paths.dir));
  SHOAL_RETURN_IF_ERROR(RemoveTree(doomed));
  return true;
}

}  // namespace

Status UnpackImage(int fd, const std::string& cache_dir, const std::string& key,
                   int64_t limit_bytes, std::optional<ImageOwner> owner) {
  SHOAL_RETURN_IF_ERROR(CheckKey(key));
  SHOAL_RETURN_IF_ERROR(MakeDirs(cache_dir, 0755));
  const ImagePaths paths = PathsOf(cache_dir, key);
  SHOAL_ASSIGN_OR_RETURN(UniqueFd lock, LockFile(paths.unpack_lock, LOCK_EX));
  if (Exists(paths.ready)) return Status::Ok();
  SHOAL_RETURN_IF_ERROR(RemoveLeftovers(cache_dir, key));
  // 0700: the image may be a user's private file; the overlay (mounted by
  // root) needs no more.
  const std::string tmp = fmt::format("{}.tmp-{}", paths.dir, ::getpid());
  if (::mkdir(tmp.c_str(), 0700) != 0) return Internal(ErrnoMessage("mkdir " + tmp));
  Status status = UnpackInto(fd, tmp, limit_bytes, owner);
  if (status.ok()) status = Publish(tmp, paths);
  if (!status.ok()) {
    (void)RemoveTree(tmp);  // the error that matters is the unpack's
    return status;
  }
  return EvictImages(cache_dir, limit_bytes, key);
}

Status EvictImages(const std::string& cache_dir, int64_t limit_bytes, const std::string& keep) {
  if (limit_bytes <= 0) return Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(std::vector<CachedImage> images, ReadyImages(cache_dir));
  int64_t total = 0;
  for (const CachedImage& image : images)
    total += image.bytes;
  for (const CachedImage& image : images) {
    if (total <= limit_bytes) break;
    if (image.key == keep) continue;
    SHOAL_ASSIGN_OR_RETURN(bool removed, EvictOne(cache_dir, image.key));
    if (removed) total -= image.bytes;
  }
  return Status::Ok();
}

}  // namespace shoal::agent
