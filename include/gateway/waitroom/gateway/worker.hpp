#pragma once
// The gateway's face to server/: one `worker` per io_context (one per core). A worker owns its
// SO_REUSEPORT acceptors and every connection accepted on them for their whole life, so the
// connection code runs as if single-threaded.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/gateway/listener_tls.hpp"
#include "waitroom/gateway/node_runtime.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/util/access_log.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::gateway {

// What every worker shares. Read-mostly; the node's runtime (config, rooms, admin access) is
// swapped whole on reload.
class shared_context {
  public:
    // A bare proxy on `cfg` (no room), until server/ publishes a whole runtime.
    shared_context(config::snapshot cfg, std::shared_ptr<const util::clock> clock)
        : runtimes_(std::make_shared<runtime_slot>(node_runtime::of_config(std::move(cfg)))),
          clock_(std::move(clock)) {}

    // The current runtime, and the slot that holds it (for those that follow it: the room
    // filter, the admin listener, the sync task). server/ publishes there.
    std::shared_ptr<const node_runtime> runtime() const { return runtimes_->load(); }
    const std::shared_ptr<runtime_slot>& runtimes() const { return runtimes_; }
    config::snapshot config() const { return runtime()->cfg; }
    const util::clock& clock() const { return *clock_; }

    // The waiting-room hook (default: pass everything). Set it before any worker starts: the
    // request path reads it without a lock.
    void set_request_filter(std::shared_ptr<request_filter> f) { filter_ = std::move(f); }
    request_filter& filter() const { return *filter_; }

    // The access log (null = off; `logging.access_log`), set by server/ before any worker
    // starts. Call `access_log()->write(record)` once per finished request.
    void set_access_log(std::shared_ptr<const util::access_log> log) {
        access_log_ = std::move(log);
    }
    const util::access_log* access_log() const { return access_log_.get(); }

    // The metrics (null = none), set by server/ before any worker starts; the request path
    // bumps them in its worker's slot.
    void set_metrics(std::shared_ptr<metrics::metric_set> m) { metrics_ = std::move(m); }
    metrics::metric_set* metrics() const { return metrics_.get(); }

  private:
    std::shared_ptr<runtime_slot> runtimes_;
    std::shared_ptr<const util::clock> clock_;
    std::shared_ptr<request_filter> filter_ = std::make_shared<request_filter>();
    std::shared_ptr<const util::access_log> access_log_;
    std::shared_ptr<metrics::metric_set> metrics_;
};

class worker {
  public:
    worker(boost::asio::io_context& ioc, std::shared_ptr<shared_context> ctx, unsigned index);
    ~worker();
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    // Opens one SO_REUSEPORT acceptor per endpoint and starts accepting. Endpoints must carry
    // concrete ports (server/ resolves port 0 once, for all workers). `listeners` is parallel
    // to `endpoints`: the listener config of each; so is `tls`, the certificates of each TLS
    // listener, shared by every worker (server/ reloads them). A TLS listener without an entry
    // there loads its own. Throws std::system_error on a bind failure, std::runtime_error when
    // certificates cannot be loaded.
    void start(const std::vector<boost::asio::ip::tcp::endpoint>& endpoints,
               const std::vector<config::listener>& listeners,
               const std::vector<std::shared_ptr<listener_tls>>& tls = {});

    // Stops accepting. Idle keep-alive connections close; a connection with a request in
    // flight finishes it, then closes. Must be called on (or posted to) the worker's thread.
    void drain();

    // Closes everything still open (drain timeout passed). Worker's thread.
    void close_all();

    // Connections open on this worker (any thread may read).
    std::size_t open_connections() const;

    // The local endpoints actually bound, in the order given to start().
    std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;

  private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace waitroom::gateway
