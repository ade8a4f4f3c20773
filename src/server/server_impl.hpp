#pragma once
// The server's state, private to src/server/: the control thread (signals, drain, reload), the
// worker threads with their io_contexts, and what the waiting room needs per process (node
// state, store, sync task, filter, admin). server.cpp runs it, wiring.cpp starts the rooms and
// the admin listener, reload.cpp applies a new file, shutdown.cpp drains and stops.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sync_timer.hpp"
#include "waitroom/admin/admin_server.hpp"
#include "waitroom/gateway/listener_tls.hpp"
#include "waitroom/gateway/origin_group.hpp"
#include "waitroom/gateway/origin_monitor.hpp"
#include "waitroom/gateway/room_admin_backend.hpp"
#include "waitroom/gateway/room_filter.hpp"
#include "waitroom/gateway/worker.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/server/server.hpp"
#include "waitroom/state/store.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/access_log.hpp"

namespace waitroom::server {

namespace asio = boost::asio;

// "a, b" for the log lines: the rooms a config declares, or "none".
std::string room_ids(const config::config& cfg);

struct server::impl {
    using work_guard = asio::executor_work_guard<asio::io_context::executor_type>;

    std::string path_;
    std::shared_ptr<gateway::shared_context> ctx_;
    std::shared_ptr<util::access_log> access_log_;

    asio::io_context control_{1};
    asio::signal_set signals_{control_};
    asio::steady_timer drain_timer_{control_};
    bool draining_ = false;
    bool finishing_ = false;
    std::chrono::steady_clock::time_point drain_deadline_;

    // Declared before workers_ so that every worker is destroyed before its io_context.
    std::vector<std::unique_ptr<asio::io_context>> iocs_;
    std::vector<work_guard> guards_;
    std::vector<std::unique_ptr<gateway::worker>> workers_;
    std::vector<std::thread> threads_;

    // The waiting room: one node state, one store and one sync task per process; the filter
    // that applies decisions on every worker.
    room::node_state node_;
    std::unique_ptr<state::store> store_;
    std::unique_ptr<state::sync_task> sync_;
    std::unique_ptr<sync_timer> sync_timer_;
    std::shared_ptr<gateway::room_filter> filter_;

    // Operating it: metrics (one slot per worker, one for the control thread), the run-time
    // room switches (the node's, so they survive reloads) and the admin listener on control_.
    std::shared_ptr<metrics::metric_set> metrics_;
    std::shared_ptr<room::room_overrides> overrides_ = std::make_shared<room::room_overrides>();
    std::shared_ptr<gateway::room_admin_backend> admin_backend_;
    // The health of the origin's servers (the node's, so it survives reloads), and its watch on
    // control_: health checks, ejections' ends, the gate the rooms read.
    std::shared_ptr<gateway::origin_health> origin_health_ =
        std::make_shared<gateway::origin_health>();
    std::shared_ptr<gateway::origin_monitor> origin_monitor_;
    std::unique_ptr<admin::admin_server> admin_;

    // The certificates of each listener (null for a plain one), parallel to the config's
    // `listen`; every worker's acceptor of a listener serves from the same one. A reload
    // re-reads them (certificates.cpp).
    std::vector<std::shared_ptr<gateway::listener_tls>> tls_;
    std::vector<std::string> tls_labels_;  // the `listener` label of each: its bound address

    impl(std::string path, config::snapshot cfg);

    ~impl() {
        admin_.reset();
        stop_threads();
        origin_monitor_.reset();
        sync_timer_.reset();
        // The shared context outlives this object in no one else, but make the order explicit:
        // the filter holds the workers' executors, so it goes before their io_contexts.
        ctx_->set_request_filter(std::make_shared<gateway::request_filter>());
        filter_.reset();
        workers_.clear();
    }

    bool start_rooms(const config::snapshot& cfg);
    bool start_admin(const config::config& cfg);
    // Loads every TLS listener's certificates (throws std::runtime_error naming the file).
    void load_certificates(const config::config& cfg,
                           const std::vector<asio::ip::tcp::endpoint>& endpoints);
    // Re-reads them from `cfg`, the file just loaded; a listener whose files fail keeps its own.
    void reload_certificates(const config::config& cfg);
    // waitroom_tls_certificate_expiry_seconds of listener `i`, and a warning when one is near.
    void publish_certificates(std::size_t i);

    int run();
    void wait_signal();
    void on_signal(int sig);
    void reload();
    void begin_shutdown(const char* why);
    void poll_drain();
    void finish_shutdown();

    // Runs `fn(worker)` on every worker's own thread, then `done()` on the control thread.
    void on_every_worker(std::function<void(gateway::worker&)> fn, std::function<void()> done);
    void stop_threads();
};

}  // namespace waitroom::server
