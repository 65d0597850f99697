#include "server/dashboard.h"

#include <httplib.h>

#include <string>

#include "server/web_assets.h"

namespace shoal::server {

namespace {

// httplib routes are regular expressions; a file's path is matched literally.
std::string LiteralPattern(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (std::string_view(R"(\^$.|?*+()[]{})").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

bool EtagMatches(const std::string& if_none_match, std::string_view etag) {
  if (if_none_match == "*") return true;
  // A list of tags, some perhaps weak (W/"..."): any of them may match.
  return if_none_match.find(etag) != std::string::npos;
}

void Serve(const WebAsset& asset, std::string_view content_type, const httplib::Request& req,
           httplib::Response& res) {
  res.set_header("ETag", std::string(asset.etag));
  // Revalidate on every load: the files change with the binary, and a 304
  // on the server's own network costs little.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  if (EtagMatches(req.get_header_value("If-None-Match"), asset.etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(asset.data.data(), asset.data.size(), std::string(content_type));
}

}  // namespace

std::string_view ContentTypeOf(std::string_view path) {
  struct Type {
    std::string_view ext;
    std::string_view type;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
  };
  for (const Type& t : kTypes) {
    if (path.ends_with(t.ext)) return t.type;
  }
  // LICENSE files and the like: no extension, plain text.
  const size_t slash = path.rfind('/');
  if (path.find('.', slash == std::string_view::npos ? 0 : slash) == std::string_view::npos) {
    return "text/plain; charset=utf-8";
  }
  return "application/octet-stream";
}

void RegisterDashboard(httplib::Server& http) {
  for (const WebAsset& asset : WebAssets()) {
    const std::string_view type = ContentTypeOf(asset.path);
    auto handler = [&asset, type](const httplib::Request& req, httplib::Response& res) {
      Serve(asset, type, req, res);
    };
    http.Get(LiteralPattern(asset.path), handler);
    if (asset.path == "/index.html") http.Get("/", handler);
  }
}

}  // namespace shoal::server
