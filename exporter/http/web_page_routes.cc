// The status pages and their JSON: rendered on the pages thread from the published refresh,
// shared through the page cache.
#include <fmt/format.h>

#include <cstring>

#include "exporter/http/web_server.h"
#include "exporter/http/web_text.h"
#include "exporter/pages/status_page.h"

namespace schedwatch {
namespace {

// No room for a page now: the bytes of pages held (answers being sent, the cache) are at the
// budget, or too many page requests wait.
Reply PagesBusy() {
  Reply reply = Text(503, "too many pages are being rendered or sent; retry later\n");
  reply.headers.push_back({MHD_HTTP_HEADER_RETRY_AFTER, "5"});
  return reply;
}

// The overview's filters from the query string: ?condition=stale&source=prod&q=bill&limit=all
OverviewFilter OverviewFilterOf(MHD_Connection* connection) {
  OverviewFilter filter;
  auto argument = [connection](const char* name) {
    const char* value = MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, name);
    return std::string(value != nullptr ? value : "");
  };
  filter.condition = argument("condition");
  filter.source = argument("source");
  filter.query = argument("q").substr(0, 200);
  filter.label = argument("label").substr(0, 300);
  std::string limit = argument("limit");
  if (limit == "all") {
    filter.limit = 0;
  } else if (!limit.empty() && limit.size() < 7 &&
             limit.find_first_not_of("0123456789") == std::string::npos && std::stoul(limit) > 0) {
    filter.limit = std::stoul(limit);
  }
  return filter;
}

}  // namespace

void WebServer::Impl::RenderBatch(std::vector<Request*>& batch) {
  // Requests for the same roles share one rendering through the page cache.
  for (Request* request : batch) request->deferred_reply = request->render();
}

MHD_Result WebServer::Impl::ServePage(Request* request, std::function<Reply(PageCache&)> render) {
  // Which roles a page shows is known only once its filters ran, on the pages thread.
  if (pages_waiting_.load() >= kMaxPagesWaiting) {
    page_cache_->CountRefused();
    return Queue(request->connection, PagesBusy());
  }
  request->render = [this, render = std::move(render)] { return render(*page_cache_); };
  return Defer(*pages_, request);
}

MHD_Result WebServer::Impl::Defer(Deferrer& deferrer, Request* request) {
  bool page = &deferrer == pages_.get();
  if (page) pages_waiting_.fetch_add(1);  // the pages thread takes it off with each batch
  if (!deferrer.Submit(request)) {
    if (page) pages_waiting_.fetch_sub(1);
    return Queue(request->connection, Text(503, "shutting down\n"));
  }
  return MHD_YES;
}

MHD_Result WebServer::Impl::ServePages(Request* request, const std::string& path) {
  MHD_Connection* connection = request->connection;
  const bool role_page = path.rfind("/roles/", 0) == 0;
  const bool role_json = path.rfind("/api/v1/roles/", 0) == 0;
  PageOptions page;
  page.telemetry_path = options_.telemetry_path;
  page.runbook_url = options_.runbook_url;
  // Pages are rendered on the pages thread from the refresh published now; the connection
  // waits, suspended, and /metrics is never queued behind them.
  std::shared_ptr<const Published> published = refresher_.Current();
  if (path == "/api/v1/status") {
    // ?label=team=db: the roles with that label only.
    std::string label = OverviewFilterOf(connection).label;
    return ServePage(request, [published, page, label](PageCache& cache) {
      const RefreshResult& result = published->result;
      auto roles = SelectStatusRoles(result, label);
      Reply reply;
      reply.shared_body = cache.Get(
          published, {"/api/v1/status", roles},
          [&](const PageSink& sink) { return RenderStatusJson(result, page, roles, sink); });
      if (!reply.shared_body) return PagesBusy();
      reply.content_type = "application/json";
      return reply;
    });
  }
  if (role_json) {
    std::string role = path.substr(std::strlen("/api/v1/roles/"));
    request->render = [published, page, role] {
      auto json = RenderRoleJson(published->result, role, page);
      nlohmann::json missing{{"error", "no such role in the spec"}, {"role", role}};
      const ShardAssignment& shard = published->result.shard;
      if (shard.Sharded()) {
        missing["error"] = "no such role in this shard's part of the spec";
        missing["shard"] = ShardAssignment::Of(role, shard.total);  // where one of that name is
      }
      Reply reply =
          json ? Text(200, std::move(*json))
               : Text(404, missing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      reply.content_type = "application/json";
      return reply;
    };
    return Defer(*pages_, request);
  }
  if (path == "/" || role_page) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!ConfiguresHeader(Lower(MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY))) {
      headers.push_back({MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, kStatusPagePolicy});
    }
    if (role_page) {
      request->render = [published, page, path, headers] {
        auto html = RenderRoleHtml(published->result, path.substr(std::strlen("/roles/")), page);
        const ShardAssignment& shard = published->result.shard;
        Reply reply =
            html ? Text(200, std::move(*html))
            : shard.Sharded()
                ? Text(404, fmt::format("no such role in this shard's part of the spec: one of "
                                        "that name is shard {}'s\n",
                                        ShardAssignment::Of(path.substr(std::strlen("/roles/")),
                                                            shard.total)))
                : Text(404, "no such role in the spec\n");
        if (html) reply.content_type = "text/html; charset=utf-8";
        reply.headers = headers;
        return reply;
      };
      return Defer(*pages_, request);
    }
    // The rows of ?limit=all at 10,000 roles are as big as the JSON: rendered once per set of
    // roles shown and refresh, whichever filters chose them; the head names the filters.
    OverviewFilter filter = OverviewFilterOf(connection);
    return ServePage(request, [published, page, filter, headers](PageCache& cache) {
      const RefreshResult& result = published->result;
      OverviewSelection selection = SelectOverview(result, filter);
      Reply reply;
      reply.shared_body = cache.Get(published, {"/", selection.drawn}, [&](const PageSink& sink) {
        return RenderOverviewRows(result, selection, sink);
      });
      if (!reply.shared_body) return PagesBusy();
      reply.body = RenderOverviewHead(result, page, filter, selection);
      reply.content_type = "text/html; charset=utf-8";
      reply.headers = headers;
      return reply;
    });
  }
  return Queue(connection, Text(404, "404 page not found\n"));
}

}  // namespace schedwatch
