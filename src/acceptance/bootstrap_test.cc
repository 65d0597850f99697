#include "acceptance/bootstrap.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <utility>

namespace shoal::acceptance {
namespace {

std::function<const char*(const char*)> Env(std::map<std::string, std::string> vars) {
  auto owned = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [owned](const char* name) -> const char* {
    auto it = owned->find(name);
    return it == owned->end() ? nullptr : it->second.c_str();
  };
}

TEST(BootstrapTest, EnvironmentLikeTorchrun) {
  auto none = DistEnvFrom(Env({}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto one = DistEnvFrom(Env({{"WORLD_SIZE", "1"}, {"RANK", "0"}}));
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->has_value());

  auto four = DistEnvFrom(Env(
      {{"WORLD_SIZE", "4"}, {"RANK", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}}));
  ASSERT_TRUE(four.ok()) << four.status().message();
  ASSERT_TRUE(four->has_value());
  EXPECT_EQ((*four)->world_size, 4);
  EXPECT_EQ((*four)->rank, 2);
  EXPECT_EQ((*four)->master_addr, "10.0.0.1");
  EXPECT_EQ((*four)->master_port, 29500);

  struct Row {
    std::map<std::string, std::string> vars;
    std::string error;
  };
  const Row bad[] = {
      {{{"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, "RANK is not set"},
      {{{"WORLD_SIZE", "4"}, {"RANK", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, "RANK=4"},
      {{{"WORLD_SIZE", "4"}, {"RANK", "1"}, {"MASTER_PORT", "1"}}, "MASTER_ADDR is not set"},
      {{{"WORLD_SIZE", "4"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}},
       "MASTER_PORT=70000"},
      {{{"WORLD_SIZE", "many"}}, "WORLD_SIZE=many"},
  };
  for (const Row& r : bad) {
    const auto got = DistEnvFrom(Env(r.vars));
    ASSERT_FALSE(got.ok()) << r.error;
    EXPECT_NE(got.status().message().find(r.error), std::string::npos) << got.status().message();
  }
}

// Rank 0's socket on a port the kernel chose, held from the bind on: no other
// process can take the port before the test uses it.
BootstrapSocket BoundSocket() {
  Result<BootstrapSocket> socket = BootstrapSocket::Bind(0);
  EXPECT_TRUE(socket.ok()) << socket.status().message();
  EXPECT_GT(socket->port(), 0);
  return std::move(socket).value();
}

TEST(BootstrapTest, ThreeProcessesAgree) {
  BootstrapSocket socket = BoundSocket();
  const int port = socket.port();
  const int gpus[] = {2, 4, 1};
  std::vector<Result<BootstrapInfo>> got(3, Status(StatusCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  int ids_made = 0;
  // Ranks 1 and 2 start first: the port is bound but not listened on yet, so
  // they are refused and must retry until rank 0 listens.
  for (int rank : {2, 1, 0}) {
    threads.emplace_back([&, rank] {
      DistEnv env{rank, 3, "127.0.0.1", port};
      auto make_id = [&] {
        ++ids_made;
        return std::string("\x01\x02unique\x00id", 11);
      };
      got[static_cast<size_t>(rank)] =
          rank == 0 ? ServeBootstrap(std::move(socket), env, gpus[rank], make_id, 10'000)
                    : Bootstrap(env, gpus[rank], make_id, 10'000);
    });
    if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(ids_made, 1);
  const int first[] = {0, 2, 6};
  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_TRUE(got[static_cast<size_t>(rank)].ok())
        << got[static_cast<size_t>(rank)].status().message();
    EXPECT_EQ(got[static_cast<size_t>(rank)]->unique_id, std::string("\x01\x02unique\x00id", 11));
    EXPECT_EQ(got[static_cast<size_t>(rank)]->first_rank, first[rank]);
    EXPECT_EQ(got[static_cast<size_t>(rank)]->total_ranks, 7);
  }
}

TEST(BootstrapTest, MissingPeersTimeOut) {
  BootstrapSocket alone_socket = BoundSocket();
  const int alone_port = alone_socket.port();
  const auto alone = ServeBootstrap(
      std::move(alone_socket), DistEnv{0, 2, "127.0.0.1", 0}, 8, [] { return std::string("id"); },
      300);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find(
                fmt::format("only 1 of 2 processes joined on port {}", alone_port)),
            std::string::npos)
      << alone.status().message();

  // Bound and never listened on: a connection is refused for as long as the
  // test holds the socket, whatever else runs on this host.
  const BootstrapSocket nobody = BoundSocket();
  const auto orphan = Bootstrap(DistEnv{1, 2, "127.0.0.1", nobody.port()}, 8, nullptr, 300);
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(orphan.status().message().find("could not reach rank 0"), std::string::npos)
      << orphan.status().message();
}

TEST(BootstrapTest, OneProcessNeedsNoNetwork) {
  const auto got = Bootstrap(
      DistEnv{0, 1, "", 0}, 4, [] { return std::string("id"); }, 100);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->total_ranks, 4);
  EXPECT_EQ(got->first_rank, 0);
  EXPECT_FALSE(Bootstrap(
                   DistEnv{0, 1, "", 0}, 0, [] { return std::string("id"); }, 100)
                   .ok());
}

}  // namespace
}  // namespace shoal::acceptance
