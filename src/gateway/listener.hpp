#pragma once
// Accepts client connections on one endpoint (SO_REUSEPORT, so every worker has its own
// acceptor on the same port) and starts a session for each, with TLS when configured. Near
// limits.max_connections the oldest idle connection is closed for each one accepted
// (client_registry); accepting stops while the worker holds the limit and none is idle.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>

#include "common.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/gateway/listener_tls.hpp"

namespace waitroom::gateway {

struct worker_context;

class listener : public std::enable_shared_from_this<listener> {
  public:
    // Opens, binds and listens; throws std::system_error on failure (startup, not request path).
    // `tls`: the listener's certificates (shared by every worker's acceptor of the endpoint),
    // null for plain TCP.
    listener(std::shared_ptr<worker_context> state, const tcp::endpoint& ep,
             const config::listener& cfg, std::shared_ptr<const listener_tls> tls);

    void run();
    void stop();
    // Accepts again after a pause for max_connections.
    void resume();
    tcp::endpoint local_endpoint() const;

  private:
    void do_accept();
    void on_accept(error_code ec, tcp_socket socket);

    std::shared_ptr<worker_context> state_;
    tcp_acceptor acceptor_;
    steady_timer retry_timer_;
    std::shared_ptr<const listener_tls> tls_;
    bool proxy_protocol_ = false;  // sessions read a PROXY header first
    bool h2c_ = false;             // plain sessions take HTTP/2 with prior knowledge
    bool paused_ = false;
    bool stopped_ = false;
};

}  // namespace waitroom::gateway
