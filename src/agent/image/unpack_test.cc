#include "agent/image/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "agent/launch/image_store.h"
#include "core/files.h"

namespace shoal::agent {
namespace {

using Json = nlohmann::json;

// One entry of a test archive.
struct Entry {
  Entry(std::string name_in, char type_in = 'f', std::string data_in = "", int mode_in = 0644,
        int64_t uid_in = 0)
      : name(std::move(name_in)),
        type(type_in),
        data(std::move(data_in)),
        mode(mode_in),
        uid(uid_in) {}

  std::string name;
  char type = 'f';   // f file, d folder, l symbolic link, h hard link, c char device, p FIFO
  std::string data;  // a file's contents, a link's target
  int mode = 0644;
  int64_t uid = 0;
};

la_ssize_t Append(archive*, void* out, const void* buffer, size_t size) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buffer), size);
  return static_cast<la_ssize_t>(size);
}

void AddEntry(archive* a, const Entry& e) {
  archive_entry* entry = archive_entry_new();
  archive_entry_set_pathname(entry, e.name.c_str());
  archive_entry_set_perm(entry, e.mode);
  archive_entry_set_uid(entry, e.uid);
  archive_entry_set_mtime(entry, 1700000000, 0);
  switch (e.type) {
    case 'd':
      archive_entry_set_filetype(entry, AE_IFDIR);
      break;
    case 'l':
      archive_entry_set_filetype(entry, AE_IFLNK);
      archive_entry_set_symlink(entry, e.data.c_str());
      break;
    case 'h':
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_hardlink(entry, e.data.c_str());
      break;
    case 'c':
      archive_entry_set_filetype(entry, AE_IFCHR);
      archive_entry_set_rdev(entry, makedev(8, 0));
      break;
    case 'p':
      archive_entry_set_filetype(entry, AE_IFIFO);
      break;
    default:
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_size(entry, static_cast<la_int64_t>(e.data.size()));
  }
  EXPECT_EQ(archive_write_header(a, entry), ARCHIVE_OK) << e.name;
  if (e.type == 'f') archive_write_data(a, e.data.data(), e.data.size());
  archive_entry_free(entry);
}

std::string Tar(const std::vector<Entry>& entries, bool gzip = false) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (gzip) archive_write_add_filter_gzip(a);
  archive_write_set_bytes_in_last_block(a, 1);
  EXPECT_EQ(archive_write_open(a, &out, nullptr, Append, nullptr), ARCHIVE_OK);
  for (const Entry& e : entries)
    AddEntry(a, e);
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char sum[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), sum, &size, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i)
    hex += fmt::format("{:02x}", sum[i]);
  return hex;
}

constexpr std::string_view kHostArchitecture =
#if defined(__aarch64__)
    "arm64";
#else
    "amd64";
#endif

// An OCI image archive, as `podman save --format oci-archive` writes one.
class OciBuilder {
 public:
  // Stores `data` as a blob; a non-empty `stored` is what goes in the file
  // instead (a damaged archive).
  std::string AddBlob(const std::string& data, const std::string& stored = "") {
    const std::string hex = Sha256Hex(data);
    entries_.push_back({"blobs/sha256/" + hex, 'f', stored.empty() ? data : stored});
    return "sha256:" + hex;
  }

  // index.json -> an image index (a decoy platform first) -> the manifest.
  // A non-empty `damaged` is stored in place of the last layer.
  std::string Build(const std::vector<std::string>& layers, const Json& config,
                    const std::string& damaged = "") {
    Json manifest = {{"schemaVersion", 2},
                     {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                     {"config", {{"digest", AddBlob(config.dump())}}},
                     {"layers", Json::array()}};
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string stored = i + 1 == layers.size() ? damaged : "";
      manifest["layers"].push_back({{"digest", AddBlob(layers[i], stored)}});
    }
    const std::string missing = "sha256:" + std::string(64, '0');
    Json list = {
        {"schemaVersion", 2},
        {"mediaType", "application/vnd.oci.image.index.v1+json"},
        {"manifests",
         {{{"digest", missing}, {"platform", {{"os", "linux"}, {"architecture", "s390x"}}}},
          {{"digest", AddBlob(manifest.dump())},
           {"platform", {{"os", "linux"}, {"architecture", kHostArchitecture}}}}}}};
    Json index = {{"schemaVersion", 2},
                  {"manifests",
                   {{{"mediaType", "application/vnd.oci.image.index.v1+json"},
                     {"digest", AddBlob(list.dump())}}}}};
    std::vector<Entry> all = {{"./oci-layout", 'f', R"({"imageLayoutVersion":"1.0.0"})"},
                              {"./index.json", 'f', index.dump()},
                              {"./blobs/", 'd', "", 0755},
                              {"./blobs/sha256/", 'd', "", 0755}};
    all.insert(all.end(), entries_.begin(), entries_.end());
    return Tar(all);
  }

 private:
  std::vector<Entry> entries_;
};

std::string OciOf(const std::vector<std::vector<Entry>>& layers) {
  OciBuilder oci;
  std::vector<std::string> tars;
  for (size_t i = 0; i < layers.size(); ++i)
    tars.push_back(Tar(layers[i], i == 0));
  return oci.Build(tars, Json::object());
}

class UnpackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / "shoal-unpack-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
    cache_ = dir_ + "/cache";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Status Unpack(const std::string& image, const std::string& key, int64_t limit = 1 << 30,
                std::optional<ImageOwner> owner = std::nullopt) {
    const std::string path = dir_ + "/image-" + key;
    EXPECT_TRUE(WriteFile(path, image, 0644).ok());
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    Status status = UnpackImage(fd, cache_, key, limit, owner);
    ::close(fd);
    return status;
  }
  std::string Rootfs(const std::string& key) const { return PathsOf(cache_, key).rootfs; }
  std::set<std::string> Names(const std::string& dir) const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      out.insert(e.path().filename());
    return out;
  }

  std::string dir_;
  std::string cache_;
};

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST_F(UnpackTest, RootfsTarball) {
  const std::string image = Tar({{"./", 'd', "", 0755},
                                 {"./bin/", 'd', "", 0755},
                                 {"./bin/tool", 'f', "#!/bin/sh\necho hi\n", 04755, 1234},
                                 {"./bin/sh", 'l', "tool"},
                                 {"./bin/again", 'h', "./bin/tool"},
                                 {"./dev/sda", 'c'},
                                 {"./run/fifo", 'p'},
                                 {"/abs", 'f', "absolute"},
                                 {"./.wh.kept", 'f', "a rootfs tarball has no whiteouts"}},
                                /*gzip=*/true);
  ASSERT_TRUE(Unpack(image, "k1").ok()) << Unpack(image, "k1").ToString();
  const std::string root = Rootfs("k1");
  EXPECT_EQ(ReadFile(root + "/bin/tool").value(), "#!/bin/sh\necho hi\n");
  struct stat tool {};
  ASSERT_EQ(::stat((root + "/bin/tool").c_str(), &tool), 0);
  EXPECT_EQ(tool.st_mode & 07777, 04755u);
  EXPECT_EQ(tool.st_uid, 1234u) << "numeric owners, as recorded";
  EXPECT_EQ(std::filesystem::read_symlink(root + "/bin/sh"), "tool");
  struct stat again {};
  ASSERT_EQ(::stat((root + "/bin/again").c_str(), &again), 0);
  EXPECT_EQ(again.st_ino, tool.st_ino) << "a hard link";
  EXPECT_FALSE(Exists(root + "/dev/sda")) << "device nodes are left out";
  EXPECT_FALSE(Exists(root + "/run/fifo"));
  EXPECT_EQ(ReadFile(root + "/abs").value(), "absolute");
  EXPECT_TRUE(Exists(root + "/.wh.kept"));

  const ImagePaths paths = PathsOf(cache_, "k1");
  EXPECT_TRUE(Exists(paths.ready));
  EXPECT_GT(std::stoll(ReadFile(paths.size).value()), 0);
  Result<ImageConfig> config = ParseImageConfig(ReadFile(paths.config).value());
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(config->env.empty());
  struct stat dir {};
  ASSERT_EQ(::stat(paths.dir.c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0700u) << "a user's private image stays private";
  EXPECT_EQ(Names(cache_), (std::set<std::string>{"k1", "k1.unpack"})) << "no temporary left";
}

// For a rootless runtime: every file the user's, whatever the image says
// (root's /etc included), set-uid bits kept (the container's root is
// nosuid) but now of the user's own files.
TEST_F(UnpackTest, AnOwnerTakesEveryFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "SKIP [privilege] setting owners needs root";
  const std::string image = Tar({{"./", 'd', "", 0755, 0},
                                 {"./etc/", 'd', "", 0755, 0},
                                 {"./etc/passwd", 'f', "root:x:0:0::/root:/bin/sh\n", 0644, 0},
                                 {"./bin/", 'd', "", 0755, 0},
                                 {"./bin/tool", 'f', "#!/bin/sh\n", 04755, 1234},
                                 {"./bin/sh", 'l', "tool"}},
                                /*gzip=*/false);
  ASSERT_TRUE(Unpack(image, "k1-u4321", 1 << 30, ImageOwner{4321, 4322}).ok());
  const std::string root = Rootfs("k1-u4321");
  for (const char* path : {"", "/etc", "/etc/passwd", "/bin", "/bin/tool", "/bin/sh"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((root + path).c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, 4321u) << path;
    EXPECT_EQ(st.st_gid, 4322u) << path;
  }
  struct stat tool {};
  ASSERT_EQ(::stat((root + "/bin/tool").c_str(), &tool), 0);
  EXPECT_EQ(tool.st_mode & 07777, 04755u);
}

TEST_F(UnpackTest, OciLayersApplyWhiteoutsWhateverTheirOrder) {
  OciBuilder oci;
  const std::string lower = Tar({{"etc/a", 'f', "a"},
                                 {"etc/b", 'f', "b"},
                                 {"opt/d/x", 'f', "x"},
                                 {"opt/d/sub/y", 'f', "y"},
                                 {"usr/bin/tool", 'f', "tool", 0755}},
                                /*gzip=*/true);
  // The new file comes before the opaque marker of its folder.
  const std::string upper = Tar({{"opt/d/z", 'f', "z"},
                                 {"opt/d/.wh..wh..opq", 'f'},
                                 {"etc/.wh.a", 'f'},
                                 {"etc/.wh.never-was", 'f'},
                                 {"nowhere/.wh.x", 'f'},
                                 {"usr/bin/tool", 'f', "tool v2", 0755}});
  const Json config = {{"architecture", kHostArchitecture},
                       {"config", {{"Env", {"PATH=/usr/bin", "A=1"}}, {"WorkingDir", "/srv"}}}};
  Status status = Unpack(oci.Build({lower, upper}, config), "k1");
  ASSERT_TRUE(status.ok()) << status.ToString();
  const std::string root = Rootfs("k1");
  EXPECT_FALSE(Exists(root + "/etc/a"));
  EXPECT_EQ(ReadFile(root + "/etc/b").value(), "b");
  EXPECT_EQ(Names(root + "/opt/d"), (std::set<std::string>{"z"}));
  EXPECT_EQ(ReadFile(root + "/usr/bin/tool").value(), "tool v2");
  EXPECT_FALSE(Exists(root + "/etc/.wh.a")) << "whiteouts are not files";
  Result<ImageConfig> back = ParseImageConfig(ReadFile(PathsOf(cache_, "k1").config).value());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->env, (std::vector<std::string>{"PATH=/usr/bin", "A=1"}));
  EXPECT_EQ(back->work_dir, "/srv");
}

TEST_F(UnpackTest, ErrorsNameTheStage) {
  struct Case {
    std::string image;
    std::string prefix;
    std::string detail;
  };
  const std::string docker_save =
      Tar({{std::string(64, 'a') + "/layer.tar", 'f', "x"}, {"manifest.json", 'f', "[]"}});
  const std::string no_manifest =
      Tar({{"oci-layout", 'f', "{}"},
           {"index.json", 'f',
            R"({"manifests":[{"digest":"sha256:)" + std::string(64, '1') + R"("}]})"}});
  const std::string bad_index = Tar({{"oci-layout", 'f', "{}"}, {"index.json", 'f', "{"}});
  OciBuilder damaged;
  const std::string layer = Tar({{"f", 'f', "real"}});
  const std::string swapped =
      damaged.Build({Tar({{"g", 'f', "one"}}), layer}, Json::object(), Tar({{"f", 'f', "fake"}}));
  int n = 0;
  for (const Case& c : std::vector<Case>{
           {"hello, not an archive", "not an image: ", ""},
           {Tar({}), "not an image: ", "neither"},
           {docker_save, "not an image: ", "docker save"},
           {bad_index, "image index: ", ""},
           {no_manifest, "image manifest: ", "is not in the archive"},
           {swapped, "image layer 2 of 2: ", "does not match its digest"},
       }) {
    const std::string key = fmt::format("k{}", ++n);
    Status status = Unpack(c.image, key);
    EXPECT_TRUE(status.message().starts_with(c.prefix)) << status.ToString();
    EXPECT_NE(status.message().find(c.detail), std::string::npos) << status.ToString();
    EXPECT_FALSE(Exists(PathsOf(cache_, key).dir)) << key;
  }
  EXPECT_EQ(Names(cache_).size(), 6u) << "the lock files only";
}

// Each archive tries to reach dir_/outside (or dir_ itself); none may.
TEST_F(UnpackTest, HostileArchivesStayInside) {
  const std::string outside = dir_ + "/outside";
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(outside + "/victim", "intact", 0644).ok());
  const std::string up = "../../../";  // from <cache>/<key>.tmp-<pid>/rootfs to dir_
  struct Case {
    std::string what;
    std::string image;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"dot-dot", Tar({{up + "escape", 'f', "x"}}), false},
      {"through a symlink", Tar({{"evil", 'l', "/"}, {"evil" + dir_ + "/escape", 'f', "x"}}),
       false},
      {"through a relative symlink", Tar({{"evil", 'l', up}, {"evil/escape", 'f', "x"}}), false},
      {"hard link out", Tar({{"h", 'h', up + "outside/victim"}}), false},
      {"hard link through a symlink",
       Tar({{"evil", 'l', outside}, {"h", 'h', "evil/victim"}, {"h", 'f', "overwritten"}}), false},
      {"device node", Tar({{"dev/", 'd'}, {"dev/sda", 'c'}}), true},
      {"whiteout climbing", OciOf({{{"a", 'f'}}, {{up + "outside/.wh.victim", 'f'}}}), false},
      {"whiteout of '..'", OciOf({{{"a", 'f'}}, {{".wh...", 'f'}}}), false},
      {"whiteout under a symlink", OciOf({{{"link", 'l', outside}}, {{"link/.wh.victim", 'f'}}}),
       true},
      {"opaque under a symlink",
       OciOf({{{"link", 'l', outside}}, {{"link/.wh..wh..opq", 'f'}, {"link2", 'f'}}}), true},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string key = fmt::format("h{}", ++n);
    Status status = Unpack(c.image, key);
    EXPECT_EQ(status.ok(), c.ok) << c.what << ": " << status.ToString();
    if (!c.ok) {
      EXPECT_TRUE(status.message().starts_with("image layer")) << status.ToString();
    }
    EXPECT_EQ(ReadFile(outside + "/victim").value(), "intact") << c.what;
    EXPECT_EQ(Names(outside), (std::set<std::string>{"victim"})) << c.what;
    EXPECT_FALSE(Exists(dir_ + "/escape")) << c.what;
    EXPECT_FALSE(Exists(cache_ + "/escape")) << c.what;
  }
  EXPECT_FALSE(Exists(Rootfs("h6") + "/dev/sda"));
}

TEST_F(UnpackTest, AReadyImageIsNotUnpackedAgainAndLeftoversGo) {
  ASSERT_TRUE(Unpack(Tar({{"v", 'f', "one"}}), "k1").ok());
  ASSERT_TRUE(Unpack(Tar({{"v", 'f', "two"}}), "k1").ok());
  EXPECT_EQ(ReadFile(Rootfs("k1") + "/v").value(), "one");

  // A crashed unpacker's temporary folder, and a folder renamed but never marked ready.
  ASSERT_EQ(::mkdir((cache_ + "/k2.tmp-99999").c_str(), 0700), 0);
  ASSERT_TRUE(WriteFile(cache_ + "/k2.tmp-99999/junk", "x", 0644).ok());
  ASSERT_EQ(::mkdir((cache_ + "/k2").c_str(), 0700), 0);
  ASSERT_TRUE(WriteFile(cache_ + "/k2/stale", "x", 0644).ok());
  ASSERT_TRUE(Unpack(Tar({{"v", 'f', "three"}}), "k2").ok());
  EXPECT_EQ(ReadFile(Rootfs("k2") + "/v").value(), "three");
  EXPECT_FALSE(Exists(cache_ + "/k2/stale"));
  EXPECT_EQ(Names(cache_), (std::set<std::string>{"k1", "k1.unpack", "k2", "k2.unpack"}));
  EXPECT_FALSE(UnpackImage(0, cache_, "../k", 0).ok()) << "a key is a plain name";
}

TEST_F(UnpackTest, TheLimitRefusesWhatCannotFitAndEvictsTheRest) {
  const std::string big(300 << 10, 'x');
  Status too_big = Unpack(Tar({{"big", 'f', big}}), "k0", 200 << 10);
  EXPECT_EQ(too_big.code(), StatusCode::kResourceExhausted) << too_big.ToString();
  EXPECT_TRUE(too_big.message().starts_with("image layer 1 of 1: ")) << too_big.ToString();

  ASSERT_TRUE(Unpack(Tar({{"big", 'f', big}}), "k1", 500 << 10).ok());
  ASSERT_TRUE(Unpack(Tar({{"big", 'f', big}}), "k2", 500 << 10).ok());
  EXPECT_FALSE(Exists(PathsOf(cache_, "k1").dir)) << "two do not fit: the older goes";
  EXPECT_TRUE(Exists(PathsOf(cache_, "k2").ready));
}

// Fake ready images a, b, c, d of 40 bytes each, used in that order.
void FakeImages(const std::string& cache) {
  ASSERT_EQ(::mkdir(cache.c_str(), 0755), 0);
  int i = 0;
  for (const char* key : {"a", "b", "c", "d"}) {
    const ImagePaths p = PathsOf(cache, key);
    ASSERT_EQ(::mkdir(p.dir.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(p.rootfs.c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(p.size, "40\n", 0644).ok());
    ASSERT_TRUE(WriteFile(p.ready, "", 0644).ok());
    const timespec used[2] = {{1000 + i, 0}, {1000 + i, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.ready.c_str(), used, 0), 0);
    ++i;
  }
}

TEST_F(UnpackTest, ImageEvictionTakesTheLeastRecentlyUsedThatNoJobHolds) {
  FakeImages(cache_);
  int held = ::open(PathsOf(cache_, "a").lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_SH), 0);
  ASSERT_TRUE(EvictImages(cache_, 90, "d").ok());
  EXPECT_TRUE(Exists(PathsOf(cache_, "a").ready)) << "a job runs from it";
  EXPECT_FALSE(Exists(PathsOf(cache_, "b").dir));
  EXPECT_FALSE(Exists(PathsOf(cache_, "c").dir));
  EXPECT_TRUE(Exists(PathsOf(cache_, "d").ready));
  ::close(held);

  ASSERT_TRUE(EvictImages(cache_, 1, "d").ok());
  EXPECT_FALSE(Exists(PathsOf(cache_, "a").dir)) << "released, it can go";
  EXPECT_TRUE(Exists(PathsOf(cache_, "d").ready)) << "never the one kept";
  ASSERT_TRUE(EvictImages(cache_, 0, "").ok()) << "no limit";
  EXPECT_TRUE(Exists(PathsOf(cache_, "d").ready));
  for (const std::string& name : Names(cache_))
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
}

}  // namespace
}  // namespace shoal::agent
