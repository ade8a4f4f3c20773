#pragma once
// The admin listener (DESIGN.md §2 "Admin listener"): its own small HTTP/1.1 server on
// `admin.listen`, serving health, readiness, metrics, room status and changes, and the live
// dashboard. It runs on an io_context server/ passes in; the data comes from an admin_backend.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "waitroom/admin/admin_backend.hpp"

namespace waitroom::admin {

struct admin_access;

struct admin_options {
    // Bound on reading one request (header and body), from its first byte.
    std::chrono::steady_clock::duration read_timeout = std::chrono::seconds{10};
    // Bound on a keep-alive connection waiting for its next request.
    std::chrono::steady_clock::duration idle_timeout = std::chrono::seconds{30};
    // Bound on writing one response.
    std::chrono::steady_clock::duration write_timeout = std::chrono::seconds{10};
    std::size_t body_limit = 64 * 1024;    // request bodies (PATCH JSON)
    std::size_t header_limit = 16 * 1024;  // request header
    std::size_t max_connections = 64;      // further connections are accepted and closed
};

// Destroy it before its io_context (the destructor posts stop() to it).
class admin_server {
  public:
    admin_server(boost::asio::io_context& ioc, std::shared_ptr<admin_backend> backend,
                 admin_options options = {});
    ~admin_server();
    admin_server(const admin_server&) = delete;
    admin_server& operator=(const admin_server&) = delete;

    // Binds and starts accepting (startup: throws std::system_error when the bind fails).
    void start(const boost::asio::ip::tcp::endpoint& endpoint);
    // Stops accepting and closes every open admin connection. Any thread.
    void stop();
    boost::asio::ip::tcp::endpoint local_endpoint() const;

    // The bearer token required on everything but /healthz and the dashboard page (which is
    // static and asks for the token itself); nullopt opens the API, which then answers only
    // requests whose Host is a loopback literal, `localhost` or one of `allowed_hosts` (421
    // otherwise). Any thread, at any time (start and reload): requests already being answered
    // keep the rules they were checked with.
    void set_token(std::optional<std::string> token, std::vector<std::string> allowed_hosts = {});
    // Or: the rules are asked of `source` for every request (the node's published runtime, so
    // that a reload switches them with everything else). Set it before start(); a null answer
    // falls back to set_token's rules.
    using access_source = std::function<std::shared_ptr<const admin_access>()>;
    void follow_access(access_source source);

  private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace waitroom::admin
