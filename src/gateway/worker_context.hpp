#pragma once
// What the listeners and sessions of one worker share: the context, the origin's servers, the
// registry of open sessions (for drain and close_all) and the open-connection count. Lives on
// the worker's thread; only `open` is read from other threads.

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <unordered_set>
#include <vector>

#include "client_slots.hpp"
#include "origin_servers.hpp"
#include "waitroom/gateway/worker.hpp"

namespace waitroom::gateway {

class listener;

// The part of a client session the worker drives from outside.
class session_base {
  public:
    virtual ~session_base() = default;
    // Idle → close now; busy → close once the exchange in flight has finished.
    virtual void drain() = 0;
    // Close now, whatever is in flight.
    virtual void close() = 0;
    // The worker's sweep (see worker_context::want_sweep): true when the session still waits for
    // a later sweep.
    virtual bool sweep(std::chrono::steady_clock::time_point cutoff) = 0;
};

struct worker_context {
    worker_context(asio::io_context& io, std::shared_ptr<shared_context> c, unsigned i)
        : ioc(io),
          ctx(std::move(c)),
          index(i),
          pool(std::make_shared<origin_servers>(io.get_executor(), ctx->metrics(), i)),
          sweep_timer(io.get_executor()) {}

    asio::io_context& ioc;
    std::shared_ptr<shared_context> ctx;
    unsigned index;
    std::shared_ptr<origin_servers> pool;  // the origin's servers and their pools
    client_slots
        slots;  // origin connections and waits held per client (max_connections_per_client)
    std::size_t buffered_bodies = 0;  // request buffer bytes past one relay piece, all sessions
    std::size_t tunnels = 0;  // WebSocket upgrades forwarded or tunnelling (origin.max_tunnels)
    std::atomic<std::size_t> open{0};
    bool draining = false;
    std::unordered_set<session_base*> sessions;
    std::vector<std::shared_ptr<listener>> listeners;
    std::shared_ptr<const node_runtime> runtime;  // the one this worker's sessions follow

    // The current runtime: one atomic load per call; after a reload the runtime is fetched and
    // the origin pool reconfigured once, here, not by every request.
    const std::shared_ptr<const node_runtime>& current() {
        if (!runtime || ctx->runtimes()->generation() != runtime->generation) {
            runtime = ctx->runtime();
            pool->configure(runtime->origins, runtime->cfg->origin);
        }
        return runtime;
    }

    // A client's next request is waited for without first trying its socket when the last read
    // found it empty (socket_reader::kind::answer). An end of stream that came with the previous
    // request hides from that wait, so every such wait is tried once by a sweep that runs while
    // any is pending: a half-closed client is let go within two sweep intervals, not after
    // keepalive_timeout.
    static constexpr std::chrono::milliseconds sweep_interval{200};
    steady_timer sweep_timer;
    bool sweep_armed = false;
    // Arms the sweep if it is not armed. `self` is this state's owner.
    static void want_sweep(const std::shared_ptr<worker_context>& self);
    void stop_sweep() {
        sweep_timer.cancel();
        sweep_armed = false;
    }

    void session_opened(session_base* s) {
        sessions.insert(s);
        open.fetch_add(1, std::memory_order_relaxed);
    }
    // Defined in listener.cpp: also lets a paused listener accept again.
    void session_closed(session_base* s);
};

}  // namespace waitroom::gateway
