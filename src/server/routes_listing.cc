// Listings (jobs, nodes): one page, or every page streamed.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>

#include "server/routes.h"

namespace shoal::server::routes {

Result<size_t> PageLimit(const httplib::Request& req, size_t stream_page) {
  if (!req.has_param("limit")) return stream_page;
  auto v = ParseInt(req.get_param_value("limit"));
  if (!v.ok() || *v < 1 || *v > state::kMaxHistoryLimit) {
    return InvalidArgument(
        fmt::format("limit must be a number from 1 to {}", state::kMaxHistoryLimit));
  }
  return static_cast<size_t>(*v);
}

void ReplyListing(httplib::Response& res, const std::string& key, bool paged, ListingPage first,
                  PageReader next) {
  res.status = 200;
  const std::string open = "{\"" + key + "\":[";
  if (paged || !first.next_after) {
    std::string body = open + first.objects + "]";
    if (paged && first.next_after) body += ",\"next_after\":" + first.next_after->dump();
    res.set_content(body + "}", "application/json");
    return;
  }
  struct Stream {
    ListingPage page;
    PageReader next;
    std::string open;
    bool opened = false;
    bool any = false;  // an object written: the next one needs a comma
  };
  auto st = std::make_shared<Stream>(Stream{std::move(first), std::move(next), open});
  res.set_chunked_content_provider("application/json", [st](size_t, httplib::DataSink& sink) {
    std::string chunk;
    if (!st->opened) {
      st->opened = true;
      chunk = st->open;
    } else if (!st->page.next_after) {
      sink.write("]}", 2);
      sink.done();
      return true;
    } else {
      auto page = st->next(*st->page.next_after);
      if (!page.ok()) return false;
      st->page = std::move(*page);
    }
    if (!st->page.objects.empty()) {
      if (st->any) chunk += ',';
      chunk += st->page.objects;
      st->any = true;
    }
    return chunk.empty() || sink.write(chunk.data(), chunk.size());
  });
}

}  // namespace shoal::server::routes
