// The dashboard's routes on a real httplib server on loopback: every embedded
// file is served with its type and ETag, `/` is the page, revalidation gets
// 304, and the API's paths are left to the API.
#include "server/dashboard.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "server/web_assets.h"

namespace shoal::server {
namespace {

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterDashboard(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  httplib::Client Client() const { return httplib::Client("127.0.0.1", port_); }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

const WebAsset* Find(std::string_view path) {
  for (const WebAsset& a : WebAssets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

TEST(WebAssetsTest, HoldsThePageItsScriptAndTheChartLibrary) {
  for (const char* path :
       {"/index.html", "/app.js", "/style.css", "/vendor/uplot/uPlot.iife.min.js",
        "/vendor/uplot/uPlot.min.css", "/vendor/uplot/LICENSE"}) {
    const WebAsset* a = Find(path);
    ASSERT_NE(a, nullptr) << path;
    EXPECT_FALSE(a->data.empty()) << path;
    EXPECT_EQ(a->etag.size(), 18u) << path;  // a quoted 16-digit prefix of the SHA-256
  }
  // Documentation beside the files is not served.
  EXPECT_EQ(Find("/vendor/uplot/README.md"), nullptr);
  std::set<std::string_view> tags;
  for (const WebAsset& a : WebAssets())
    tags.insert(a.etag);
  EXPECT_EQ(tags.size(), WebAssets().size());
}

TEST(WebAssetsTest, ContentTypesComeFromTheExtension) {
  EXPECT_EQ(ContentTypeOf("/index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("/app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("/vendor/uplot/uPlot.min.css"), "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("/vendor/uplot/LICENSE"), "text/plain; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("/data.bin"), "application/octet-stream");
}

TEST_F(DashboardTest, RootIsThePage) {
  auto client = Client();
  auto root = client.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 200);
  EXPECT_EQ(root->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(root->body.find("/app.js"), std::string::npos);
  auto index = client.Get("/index.html");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->body, root->body);
  EXPECT_EQ(root->get_header_value("Cache-Control"), "no-cache");
  EXPECT_FALSE(root->get_header_value("Content-Security-Policy").empty());
}

TEST_F(DashboardTest, EveryFileIsServedWithItsTypeAndETag) {
  auto client = Client();
  for (const WebAsset& a : WebAssets()) {
    auto r = client.Get(std::string(a.path));
    ASSERT_TRUE(r) << a.path;
    EXPECT_EQ(r->status, 200) << a.path;
    EXPECT_EQ(r->body, a.data) << a.path;
    EXPECT_EQ(r->get_header_value("Content-Type"), ContentTypeOf(a.path)) << a.path;
    EXPECT_EQ(r->get_header_value("ETag"), a.etag) << a.path;
  }
}

TEST_F(DashboardTest, AMatchingETagGets304WithoutABody) {
  const WebAsset* js = Find("/app.js");
  ASSERT_NE(js, nullptr);
  auto client = Client();
  auto same = client.Get("/app.js", {{"If-None-Match", std::string(js->etag)}});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 304);
  EXPECT_TRUE(same->body.empty());
  auto other = client.Get("/app.js", {{"If-None-Match", "\"0000000000000000\""}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
}

TEST_F(DashboardTest, PathsAreMatchedLiterally) {
  auto client = Client();
  // '.' in a file's path is not a regular-expression wildcard.
  auto r = client.Get("/appXjs");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  auto api = client.Get("/v1/nodes");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 404);
}

}  // namespace
}  // namespace shoal::server
