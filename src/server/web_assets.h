#pragma once

// The dashboard's static files (web/), compiled into the binary: the build
// generates their definition (cmake/EmbedFiles.cmake), so `shoal server`
// serves them with nothing to install and nothing to download.

#include <span>
#include <string_view>

namespace shoal::server {

// One embedded file. Every view points into static storage.
struct WebAsset {
  std::string_view path;  // URL path, "/index.html", "/vendor/uplot/uPlot.min.css"
  std::string_view data;  // the file's bytes
  std::string_view etag;  // quoted strong ETag: a prefix of the file's SHA-256
};

// Every embedded file, sorted by path. Thread-safe (immutable).
std::span<const WebAsset> WebAssets();

}  // namespace shoal::server
