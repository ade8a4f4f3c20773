#pragma once
// The admin listener's routing and answers, apart from the socket code so that every endpoint,
// status and JSON body is decided in one place: a request in, a reply out (later, for PATCH).

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "waitroom/admin/admin_backend.hpp"
#include "waitroom/admin/admin_token.hpp"

namespace waitroom::admin {

struct admin_reply {
    unsigned status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // Allow, WWW-Authenticate…
};

using admin_request = boost::beast::http::request<boost::beast::http::string_body>;

class admin_routes {
  public:
    explicit admin_routes(std::shared_ptr<admin_backend> backend) : backend_(std::move(backend)) {}

    // Answers `req` under `access`. `done` is called exactly once: before handle returns, or
    // later from the thread the backend completes a PATCH on.
    void handle(const admin_request& req, const admin_access& access,
                std::function<void(admin_reply)> done) const;

    // A JSON error reply: {"error": message} plus `field` when one is named.
    static admin_reply error(unsigned status, std::string_view message,
                             std::string_view field = {});

  private:
    // GET /rooms/{id}/preview?state=queued|event|reject&lang=xx-XX
    admin_reply preview(std::string_view id, std::string_view target) const;
    // GET /rooms/{id}/analytics?minutes=N
    admin_reply analytics(std::string_view id, std::string_view query) const;
    // GET /rooms/{id}/analytics.csv?from=T&to=T | ?event=NAME
    admin_reply analytics_csv(std::string_view id, std::string_view query) const;

    std::shared_ptr<admin_backend> backend_;
};

}  // namespace waitroom::admin
