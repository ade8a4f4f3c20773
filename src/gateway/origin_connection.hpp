#pragma once
// One keep-alive connection to the origin, plain TCP or TLS. Owned by the origin_pool while
// idle and by one client_session while it carries a request; `visit` hands the concrete stream
// to generic code so the forwarding logic is written once for both kinds.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "common.hpp"

namespace waitroom::gateway {

class origin_pool;

class origin_connection {
  public:
    // A TLS connection when `tls` is given (the pool's context, which outlives it).
    origin_connection(executor_type ex, ssl::context* tls);

    template <class F>
    decltype(auto) visit(F&& f) {
        if (tls_) {
            return f(*tls_);
        }
        return f(*tcp_);
    }

    tcp_stream& lowest() { return tls_ ? tls_->next_layer() : *tcp_; }
    bool is_tls() const { return tls_.has_value(); }
    ssl::stream<tcp_stream>* tls_stream() { return tls_ ? &*tls_ : nullptr; }

    // Bytes read from the origin past the last message (kept with the connection).
    beast::flat_buffer& buffer() { return buffer_; }

    // True when the peer has closed or sent something unasked while the connection sat idle.
    // `peek`: also ask the kernel (one non-blocking MSG_PEEK recv, a system call); without it
    // only what is known for free is checked (closed here, stray bytes already buffered).
    bool looks_dead(bool peek);

    void close();

    std::uint64_t requests_served = 0;  // > 0: came from the pool (retry a stale failure once)
    steady_timer idle_timer;            // closes it after origin.idle_timeout unused
    bool idle_watched = false;          // idle_timer is pending
    std::uint64_t pool_generation = 0;  // pool configuration it was made under
    std::chrono::steady_clock::time_point idle_since;  // when it last went back to the pool
    bool counted = false;             // connected and counted in the open-connections gauge
    std::weak_ptr<origin_pool> home;  // the pool it goes back to (its server's)

  private:
    std::optional<tcp_stream> tcp_;
    std::optional<ssl::stream<tcp_stream>> tls_;
    beast::flat_buffer buffer_;
};

}  // namespace waitroom::gateway
