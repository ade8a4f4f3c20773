// The server's life: the worker threads started and joined, the control thread's signals, and
// the public face (server.hpp).
#include "waitroom/server/server.hpp"
#include "server_impl.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <csignal>
#include <exception>
#include <thread>

#include <pthread.h>

#include "endpoints.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/pages/page_renderer.hpp"
#include "waitroom/server/logging.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::server {

namespace {

const char* signal_name(int sig) {
    switch (sig) {
        case SIGHUP:
            return "SIGHUP";
        case SIGTERM:
            return "SIGTERM";
        case SIGINT:
            return "SIGINT";
        case SIGUSR1:
            return "SIGUSR1";
        default:
            return "signal";
    }
}

std::shared_ptr<const util::clock> make_clock(const config::config& cfg) {
    if (cfg.testing.time_scale != 1.0) {
        spdlog::warn(
            "testing.time_scale is {}: the product clock runs faster than real time "
            "(test-only setting)",
            cfg.testing.time_scale);
        return std::make_shared<util::scaled_clock>(cfg.testing.time_scale);
    }
    return std::make_shared<util::system_clock>();
}

}  // namespace

std::string room_ids(const config::config& cfg) {
    std::string out;
    for (const auto& r : cfg.rooms) {
        out += out.empty() ? "" : ", ";
        out += r.id;
    }
    return out.empty() ? "none" : out;
}

config::load_result load_config(const std::string& path) {
    auto r = config::load_file(path);
    if (!r.ok()) {
        return r;
    }
    // Templates are part of the configuration: a room whose page does not compile is refused
    // by `check`, at start and on reload, like any other bad setting.
    auto pages = pages::page_templates::load(*r.cfg);
    if (!pages.ok()) {
        r.problems = std::move(pages.problems);
        r.cfg = nullptr;
    }
    return r;
}

server::impl::impl(std::string path, config::snapshot cfg) : path_(std::move(path)) {
    ctx_ = std::make_shared<gateway::shared_context>(cfg, make_clock(*cfg));
}

int server::impl::run() {
    // Register the signals before anything is announced, so that a script that reacts to the
    // "listening on" line can already signal us.
    signals_.add(RELOAD_SIGNAL);
    for (int sig : GRACEFUL_SHUTDOWN_SIGNALS) {
        signals_.add(sig);
    }
    signals_.add(REOPEN_LOGS_SIGNAL);
    std::signal(SIGPIPE, SIG_IGN);

    auto cfg = ctx_->config();
    apply_level(cfg->logging.level);
    try {
        access_log_ = open_access_log(cfg->logging.access_log);
    } catch (const std::exception& e) {
        spdlog::error("logging.access_log: cannot open '{}': {}", cfg->logging.access_log,
                      e.what());
        return 1;
    }
    ctx_->set_access_log(access_log_);

    unsigned n = cfg->threads != 0 ? cfg->threads : std::thread::hardware_concurrency();
    n = std::max(1u, n);

    for (unsigned i = 0; i < n; ++i) {
        // One thread runs each worker's io_context, and every socket of a worker is only ever
        // touched on that thread (others post to it): the reactor needs no per-socket locks.
        iocs_.push_back(std::make_unique<asio::io_context>(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO));
    }
    metrics_ = std::make_shared<metrics::metric_set>(n + 1);
    ctx_->set_metrics(metrics_);
    if (!start_rooms(cfg)) {
        return 1;
    }

    resolved_listeners resolved;
    try {
        resolved = resolve_listeners(control_, cfg->listen);
        load_certificates(*cfg, resolved.endpoints);
        for (unsigned i = 0; i < n; ++i) {
            workers_.push_back(std::make_unique<gateway::worker>(*iocs_[i], ctx_, i));
            workers_.back()->start(resolved.endpoints, cfg->listen, tls_);
        }
    } catch (const std::exception& e) {
        spdlog::error("cannot start: {}", e.what());
        return 1;
    }
    resolved.reservations.clear();

    for (std::size_t i = 0; i < resolved.endpoints.size(); ++i) {
        spdlog::info("listening on {}",
                     listener_url(resolved.endpoints[i], cfg->listen[i].tls.has_value()));
    }
    if (!start_admin(*cfg)) {
        return 1;
    }
    spdlog::info("waitroomd started: {} worker thread(s), origin {}, rooms: {}", n, cfg->origin.url,
                 room_ids(*cfg));

    for (unsigned i = 0; i < n; ++i) {
        guards_.push_back(asio::make_work_guard(*iocs_[i]));
        threads_.emplace_back([this, i] {
            // "worker-N" in top -H, ps -L and /proc/PID/task/*/comm.
            const std::string name = "worker-" + std::to_string(i);
            pthread_setname_np(pthread_self(), name.c_str());  // ≤ 15 characters: threads ≤ 1024
            // A handler that throws is a bug; log it and keep the worker serving.
            for (;;) {
                try {
                    iocs_[i]->run();
                    return;
                } catch (const std::exception& e) {
                    spdlog::error("worker {}: unhandled exception: {}", i, e.what());
                }
            }
        });
    }

    wait_signal();
    control_.run();
    stop_threads();
    spdlog::info("waitroomd stopped");
    return 0;
}

void server::impl::wait_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
        if (ec) {
            return;
        }
        on_signal(sig);
        if (!finishing_) {
            wait_signal();
        }
    });
}

void server::impl::on_signal(int sig) {
    if (sig == RELOAD_SIGNAL) {
        spdlog::info("{} received: reloading {}", signal_name(sig), path_);
        reload();
        return;
    }
    if (sig == REOPEN_LOGS_SIGNAL) {
        // The main log goes to stderr, whose file (if any) belongs to whoever started us.
        if (access_log_ && reopen_access_log(*access_log_)) {
            spdlog::info("{} received: reopening the access log", signal_name(sig));
        } else {
            spdlog::info("{} received: no access log file to reopen", signal_name(sig));
        }
        return;
    }
    begin_shutdown(signal_name(sig));
}

void server::impl::stop_threads() {
    guards_.clear();
    for (auto& ioc : iocs_) {
        ioc->stop();
    }
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
    threads_.clear();
}

server::server(std::string config_path, config::snapshot cfg)
    : impl_(std::make_unique<impl>(std::move(config_path), std::move(cfg))) {}

server::~server() = default;

int server::run() {
    return impl_->run();
}

void server::stop() {
    asio::post(impl_->control_, [this] { impl_->begin_shutdown("stop requested"); });
}
}  // namespace waitroom::server
