#pragma once
// A worker's pool of keep-alive connections to one origin server: bounded by
// origin.max_connections, reused across requests and client sessions, LIFO so the warmest
// connection goes first, idle ones closed after origin.idle_timeout. Single-threaded (one per
// server and worker, see origin_servers.hpp), so it takes no lock.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "origin_connection.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/metrics/metrics.hpp"

namespace waitroom::gateway {

class origin_pool : public std::enable_shared_from_this<origin_pool> {
  public:
    // Idle for longer than this, a pooled connection is checked with a peek before reuse.
    static constexpr std::chrono::milliseconds peek_after{1000};

    using handler = std::function<void(error_code, std::shared_ptr<origin_connection>)>;

    // `metrics` (optional, outlives the pool): the open-connections gauge, in slot `slot`.
    explicit origin_pool(executor_type ex, metrics::metric_set* metrics = nullptr,
                         unsigned slot = 0);

    // Adopts the origin settings; when they differ from the current ones the idle connections
    // are closed and connections in use are not taken back. Cheap when nothing changed.
    void configure(const config::origin& o);
    // The pool connects to the origin `o` names (its address and TLS settings; the timeouts and
    // sizes may differ).
    bool serves(const config::origin& o) const;

    // Hands a connected connection to `h` (always posted, never inline): an idle one unless
    // `fresh`, else a new one while below max_connections, else the next one released. A wait
    // for a released one ends after origin.pool_wait_timeout with `busy()`; so does a request
    // that finds origin.max_pool_waiters already waiting, at once.
    void acquire(handler h, bool fresh = false, bool retryable = false);

    // The error of a wait for a connection that ended because the pool is full (→ 503).
    static error_code busy();

    // The warmest idle connection that still looks alive, or null (then call acquire). Inline
    // and without a system call for a `retryable` request (idempotent, no body) on a connection
    // idle for less than `peek_after`: if the origin closed it meanwhile, the failure comes
    // before any response byte and the session retries once on a new connection, as nginx's
    // `proxy_next_upstream error` does. Anything else pays one MSG_PEEK recv first.
    std::shared_ptr<origin_connection> take_idle(bool retryable);

    // Gives a connection back; `reusable` only when its last response was read completely and
    // both sides allow keep-alive.
    void release(std::shared_ptr<origin_connection> c, bool reusable);

    // Closes every idle connection (drain).
    void close_idle();

    // "host" or "host:port" as the origin expects it in Host.
    const std::string& host_header() const { return host_header_; }
    // The path put in front of every forwarded path ("" for none).
    const std::string& base_path() const { return origin_.base_path; }

  private:
    class connector;

    void connect(handler h);
    void on_connected(error_code ec, std::shared_ptr<origin_connection> c, handler h);
    void watch_idle(const std::shared_ptr<origin_connection>& c);
    void serve_waiter();
    void watch_waiters();
    void on_waiters_timer(error_code ec);
    // Closes a connection that leaves the pool's count for good.
    void discard(origin_connection& c);

    executor_type ex_;
    config::origin origin_;
    bool configured_ = false;
    std::string host_header_;
    std::unique_ptr<ssl::context> tls_;
    std::uint64_t generation_ = 0;
    std::vector<std::shared_ptr<origin_connection>> idle_;
    struct waiter {
        handler h;
        std::chrono::steady_clock::time_point deadline;
    };
    std::deque<waiter> waiters_;  // in arrival order, so deadlines ascend (but for a reload)
    steady_timer waiters_timer_;  // armed for the first waiter's deadline while any waits
    bool waiters_timer_armed_ = false;
    std::size_t total_ = 0;  // idle + in use + connecting
    metrics::metric_set* metrics_ = nullptr;
    unsigned slot_ = 0;
};

}  // namespace waitroom::gateway
