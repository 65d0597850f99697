#include "agent/launch/image_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/files.h"
#include "core/job.h"

namespace shoal::agent {
namespace {

class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / "shoal-image-store-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Touch(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFile(path, "x", 0644).ok());
    return path;
  }

  std::string dir_;
};

TEST_F(ImageStoreTest, NamesAreFilesInTheImageFolder) {
  const std::string busybox = Touch("busybox+1.35.tar");
  EXPECT_EQ(ImageFileFor("busybox:1.35", dir_).value(), busybox);
  EXPECT_EQ(ImageFileFor("docker://busybox:1.35", dir_).value(), busybox);

  const std::string tgz = Touch("ghcr.io+org+app+v2+x.tgz");
  EXPECT_EQ(ImageFileFor("ghcr.io/org/app:v2#x", dir_).value(), tgz);

  // The bare name wins over its suffixed forms; a folder is not an image.
  Touch("app.tar.gz");
  EXPECT_EQ(ImageFileFor("app", dir_).value(), dir_ + "/app.tar.gz");
  Touch("app");
  EXPECT_EQ(ImageFileFor("app", dir_).value(), dir_ + "/app");
  ASSERT_EQ(::mkdir((dir_ + "/tool").c_str(), 0755), 0);
  Touch("tool.tar");
  EXPECT_EQ(ImageFileFor("tool", dir_).value(), dir_ + "/tool.tar");
}

TEST_F(ImageStoreTest, AbsolutePathsAreTheCallersToOpen) {
  EXPECT_EQ(ImageFileFor("/home/alice/img.tar", dir_).value(), "/home/alice/img.tar");
  EXPECT_EQ(ImageFileFor("/home/alice/img.tar", "").value(), "/home/alice/img.tar");
}

TEST_F(ImageStoreTest, BadReferencesAreRefused) {
  const std::string long_name(kMaxContainerImageBytes + 1, 'a');
  for (const std::string& bad :
       {std::string(), std::string("a/../b"), std::string(".."), std::string("/home/../etc/x"),
        std::string("a\nb"), std::string("a\x7f"), long_name, std::string("docker://")}) {
    Result<std::string> r = ImageFileFor(bad, dir_);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(ImageStoreTest, MissingImagesSayWhereToPutThem) {
  Result<std::string> r = ImageFileFor("busybox:1.35", dir_);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "image 'busybox:1.35' is not on this node: Shoal does not pull images; put it at " +
                dir_ + "/busybox+1.35.tar");

  Result<std::string> none = ImageFileFor("busybox:1.35", "");
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("no image folder configured"), std::string::npos)
      << none.status().message();
}

TEST_F(ImageStoreTest, KeyNamesOneVersionOfAFile) {
  const std::string path = Touch("img.tar");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const std::string key = ImageKey(st);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  struct stat again {};
  ASSERT_EQ(::stat(path.c_str(), &again), 0);
  EXPECT_EQ(ImageKey(again), key);
  for (auto change :
       {+[](struct stat& s) { s.st_mtim.tv_nsec += 1; },
        +[](struct stat& s) { s.st_mtim.tv_sec += 1; }, +[](struct stat& s) { s.st_size += 1; },
        +[](struct stat& s) { s.st_ino += 1; }, +[](struct stat& s) { s.st_ctim.tv_nsec += 1; },
        +[](struct stat& s) { s.st_uid += 1; }}) {
    struct stat other = st;
    change(other);
    EXPECT_NE(ImageKey(other), key);
  }
}

TEST_F(ImageStoreTest, PathsAndConfig) {
  const ImagePaths p = PathsOf("/var/cache/shoal/images", "0123456789abcdef");
  EXPECT_EQ(p.dir, "/var/cache/shoal/images/0123456789abcdef");
  EXPECT_EQ(p.rootfs, p.dir + "/rootfs");
  EXPECT_EQ(p.config, p.dir + "/config.json");
  EXPECT_EQ(p.size, p.dir + "/size");
  EXPECT_EQ(p.ready, p.dir + "/ready");
  EXPECT_EQ(p.lock, p.dir + ".lock");
  EXPECT_EQ(p.unpack_lock, p.dir + ".unpack");

  ImageConfig config{{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, "/work"};
  Result<ImageConfig> back = ParseImageConfig(ImageConfigJson(config));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->env, config.env);
  EXPECT_EQ(back->work_dir, "/work");
  EXPECT_TRUE(ParseImageConfig("{}").ok());
  EXPECT_FALSE(ParseImageConfig("{").ok());
  EXPECT_FALSE(ParseImageConfig(R"({"env": "PATH=/bin"})").ok()) << "a Status, not a throw";
  EXPECT_FALSE(ParseImageConfig("[]").ok());
}

}  // namespace
}  // namespace shoal::agent
