#pragma once

// The web dashboard: serves the embedded files of web/ (see web_assets.h) at
// `/`, `/index.html` and their own paths. The files hold no data; the page
// fetches everything from the API with the user's token, so these routes need
// no authentication.

#include <string_view>

namespace httplib {
class Server;
}

namespace shoal::server {

// The Content-Type for a file name, from its extension
// ("application/octet-stream" for one it does not know).
std::string_view ContentTypeOf(std::string_view path);

// Adds GET (and HEAD) routes for every embedded file to `http`. Answers carry
// an ETag and `Cache-Control: no-cache`; a matching If-None-Match gets 304.
// Call before the server starts listening. The handlers refer to static data
// only, and run on any of the server's threads.
void RegisterDashboard(httplib::Server& http);

}  // namespace shoal::server
