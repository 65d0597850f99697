#include "server/state_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace shoal::server {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

void Touch(const std::string& path, mode_t mode) {
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

class StateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-state-dir-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(StateDirTest, ANewOneIsSearchableOnlyWhateverTheUmask) {
  const mode_t old = ::umask(077);
  auto notes = SecureStateDir(root_ + "/a/state");
  ::umask(old);
  ASSERT_TRUE(notes.ok()) << notes.status().ToString();
  EXPECT_TRUE(notes->empty());
  EXPECT_EQ(ModeOf(root_ + "/a/state"), 0711u);
}

TEST_F(StateDirTest, AnOpenOneAndWhatIsOpenInsideAreClosedWithANote) {
  const std::string dir = root_ + "/state";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  Touch(dir + "/shoal.db", 0644);
  Touch(dir + "/admin.token", 0600);
  Touch(dir + "/group.txt", 0660);
  ASSERT_EQ(::mkdir((dir + "/agents").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir + "/agents").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("/etc/passwd", (dir + "/link").c_str()), 0);
  auto notes = SecureStateDir(dir);
  ASSERT_TRUE(notes.ok()) << notes.status().ToString();
  EXPECT_EQ(ModeOf(dir), 0711u);
  EXPECT_EQ(ModeOf(dir + "/shoal.db"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/admin.token"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/group.txt"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/agents"), 0711u);  // search bits kept
  EXPECT_EQ(ModeOf("/etc/passwd"), 0644u);    // a link is not followed
  std::string all;
  for (const std::string& n : *notes)
    all += n + "\n";
  EXPECT_EQ(notes->size(), 4u) << all;
  EXPECT_NE(all.find(dir + " was mode 0755: it is 0711 now"), std::string::npos) << all;
  EXPECT_NE(all.find(dir + "/shoal.db was open to other users (mode 0644): it is 0600 now"),
            std::string::npos)
      << all;
  // Once closed, a second start has nothing to say.
  auto again = SecureStateDir(dir);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST_F(StateDirTest, OneOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "[privilege] needs root to give the folder away";
  const std::string dir = root_ + "/state";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  auto notes = SecureStateDir(dir);
  ASSERT_FALSE(notes.ok());
  EXPECT_NE(notes.status().message().find("belongs to uid 65534"), std::string::npos)
      << notes.status().message();
}

TEST_F(StateDirTest, APathBehindAClosedFolderIsUnreachable) {
  ASSERT_EQ(::mkdir((root_ + "/closed").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((root_ + "/closed").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);
  EXPECT_NE(UnreachableByOthers(root_ + "/closed/state/shoal.sock")
                .find(root_ + "/closed (mode 0700) is not searchable"),
            std::string::npos);
  ASSERT_EQ(::mkdir((root_ + "/open").c_str(), 0711), 0);
  ASSERT_EQ(::chmod((root_ + "/open").c_str(), 0711), 0);
  // /tmp and / are searchable by everyone.
  EXPECT_EQ(UnreachableByOthers(root_ + "/open/shoal.sock"), "");
}

}  // namespace
}  // namespace shoal::server
