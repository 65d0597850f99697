// The Mailer against real programs: a stand-in sendmail that keeps what it
// reads, one that fails, one that hangs, one that does not exist.
#include "server/mailer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace shoal::server {
namespace {

class MailerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-mailer-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // An executable shell script at dir_/name.
  std::string Program(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
};

TEST_F(MailerTest, TheProgramReadsTheWholeMessageWithSendmailsFlags) {
  const std::string prog =
      Program("sendmail", "echo \"$@\" > " + dir_ + "/args; cat >> " + dir_ + "/mail");
  Mailer m(prog);
  m.Send({{"ann", "Shoal Job_id=7 Name=train Began, Queued time 00:00:01", "the body"},
          {"bob@example.org", "second", "more"}});
  m.Flush();
  EXPECT_EQ(m.sent(), 2u);
  EXPECT_EQ(m.failed(), 0u);
  EXPECT_EQ(Read("args"), "-t -oi\n");
  EXPECT_EQ(Read("mail"),
            "To: ann\nSubject: Shoal Job_id=7 Name=train Began, Queued time 00:00:01\n\nthe "
            "body\nTo: bob@example.org\nSubject: second\n\nmore\n");
}

TEST_F(MailerTest, AJobNameCannotAddAHeader) {
  // A job named "x\nBcc: everyone" must stay one Subject line.
  const std::string text = Mailer::Message({"ann\nCc: eve", "Name=x\nBcc: everyone\r", "body"});
  EXPECT_EQ(text, "To: ann Cc: eve\nSubject: Name=x Bcc: everyone \n\nbody\n");
}

TEST_F(MailerTest, FailuresAreCountedAndAHangingProgramIsKilled) {
  Mailer failing(Program("fails", "cat > /dev/null; exit 3"));
  failing.Send({{"ann", "s", "b"}});
  failing.Flush();
  EXPECT_EQ(failing.failed(), 1u);
  EXPECT_EQ(failing.sent(), 0u);

  const Status missing =
      RunMailProgram(dir_ + "/no-such-program", "To: a\n\n", std::chrono::seconds(5));
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no-such-program"), std::string::npos) << missing.message();

  const auto t0 = std::chrono::steady_clock::now();
  const Status hung = RunMailProgram(Program("hangs", "exec sleep 30"), "To: a\n\n",
                                     std::chrono::milliseconds(300));
  EXPECT_FALSE(hung.ok());
  EXPECT_NE(hung.message().find("killed"), std::string::npos) << hung.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST_F(MailerTest, AFullQueueDropsAndCounts) {
  // The program waits for a file, so the first message holds the worker.
  Mailer m(Program("slow", "while [ ! -e " + dir_ + "/go ]; do sleep 0.01; done; cat > /dev/null"),
           /*max_queue=*/2);
  std::vector<MailOrder> many(6, MailOrder{"ann", "s", "b"});
  m.Send(many);
  std::ofstream(dir_ + "/go") << "";
  m.Flush();
  EXPECT_EQ(m.sent() + m.dropped(), 6u);
  EXPECT_GE(m.dropped(), 3u);  // at most one in hand and two queued
}

}  // namespace
}  // namespace shoal::server
