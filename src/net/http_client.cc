#include "net/http_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include "core/strings.h"

namespace shoal::net {

struct HttpClient::Impl {
  Impl(const std::string& host, int port) : client(host, port) {}
  httplib::Client client;
  httplib::Headers headers;
};

Result<std::pair<std::string, int>> ParseHostPort(const std::string& base, int default_port,
                                                  bool allow_any_port) {
  std::string_view s = Trim(base);
  if (StartsWith(s, "https://"))
    return InvalidArgument("https is not supported yet; use http:// on a trusted network");
  if (StartsWith(s, "http://")) s.remove_prefix(7);
  while (!s.empty() && s.back() == '/')
    s.remove_suffix(1);
  if (s.empty()) return InvalidArgument("empty server address");
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::make_pair(std::string(s), default_port);
  auto port = ParseInt(s.substr(colon + 1));
  if (!port.ok() || *port < (allow_any_port ? 0 : 1) || *port > 65535) {
    return InvalidArgument(fmt::format("'{}' has a bad port", base));
  }
  return std::make_pair(std::string(s.substr(0, colon)), static_cast<int>(*port));
}

Result<std::unique_ptr<HttpClient>> HttpClient::Connect(const std::string& base,
                                                        const ClientOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(auto hp, ParseHostPort(base, 6820));
  auto impl = std::make_unique<Impl>(hp.first, hp.second);
  impl->client.set_tcp_nodelay(true);
  impl->client.set_keep_alive(options.keep_alive);
  impl->client.set_connection_timeout(std::chrono::milliseconds(options.connect_timeout_ms));
  impl->client.set_read_timeout(std::chrono::milliseconds(options.read_timeout_ms));
  impl->client.set_write_timeout(std::chrono::milliseconds(options.read_timeout_ms));
  auto client = std::unique_ptr<HttpClient>(
      new HttpClient(std::move(impl), fmt::format("{}:{}", hp.first, hp.second)));
  client->set_token(options.token);
  return client;
}

HttpClient::HttpClient(std::unique_ptr<Impl> impl, std::string base)
    : impl_(std::move(impl)), base_(std::move(base)) {}
HttpClient::~HttpClient() = default;

void HttpClient::CloseConnection() {
  impl_->client.stop();
}

void HttpClient::set_token(const std::string& token) {
  impl_->headers.erase("Authorization");
  if (!token.empty()) impl_->headers.emplace("Authorization", "Bearer " + token);
}

namespace {

Result<HttpResponse> Convert(const httplib::Result& r, const std::string& base) {
  if (!r) {
    return Status(StatusCode::kUnavailable, fmt::format("cannot reach the Shoal server at {} ({})",
                                                        base, httplib::to_string(r.error())));
  }
  HttpResponse out{r->status, r->body, {}};
  for (const auto& [k, v] : r->headers)
    out.headers.emplace(k, v);
  return out;
}

}  // namespace

Result<HttpResponse> HttpClient::Get(const std::string& path) {
  return Convert(impl_->client.Get(path, impl_->headers), base_);
}

Result<HttpResponse> HttpClient::Post(const std::string& path, const std::string& json_body) {
  return Convert(impl_->client.Post(path, impl_->headers, json_body, "application/json"), base_);
}

Result<HttpResponse> HttpClient::Patch(const std::string& path, const std::string& json_body) {
  return Convert(impl_->client.Patch(path, impl_->headers, json_body, "application/json"), base_);
}

Result<HttpResponse> HttpClient::Delete(const std::string& path) {
  return Convert(impl_->client.Delete(path, impl_->headers), base_);
}

}  // namespace shoal::net
