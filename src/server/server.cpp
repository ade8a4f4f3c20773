#include "waitroom/server/server.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <thread>

#include <pthread.h>

#include "endpoints.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/config/values.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/admin/admin_server.hpp"
#include "waitroom/admin/admin_token.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/gateway/node_runtime.hpp"
#include "waitroom/gateway/room_admin_backend.hpp"
#include "waitroom/gateway/room_filter.hpp"
#include "waitroom/gateway/worker.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/server/logging.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/redis_store.hpp"
#include "waitroom/state/sync_task.hpp"
#include "sync_timer.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::server {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// How often the control loop looks at the workers' open connections while draining.
constexpr auto drain_poll_interval = 20ms;

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

bool same_listeners(const std::vector<config::listener>& a,
                    const std::vector<config::listener>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        return x.host == y.host && x.port == y.port && x.tls.has_value() == y.tls.has_value() &&
               (!x.tls || (x.tls->cert == y.tls->cert && x.tls->key == y.tls->key));
    });
}

std::string room_ids(const config::config& cfg) {
    std::string out;
    for (const auto& r : cfg.rooms) {
        out += out.empty() ? "" : ", ";
        out += r.id;
    }
    return out.empty() ? "none" : out;
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
    // that applies decisions on every worker; a timer per worker that hands its counters over.
    room::node_state node_;
    std::unique_ptr<state::store> store_;
    std::unique_ptr<state::sync_task> sync_;
    std::unique_ptr<sync_timer> sync_timer_;
    std::shared_ptr<gateway::room_filter> filter_;
    std::vector<std::unique_ptr<flush_timer>> flush_timers_;

    // Operating it: metrics (one slot per worker, one for the control thread), the run-time
    // room switches (the node's, so they survive reloads) and the admin listener on control_.
    std::shared_ptr<metrics::metric_set> metrics_;
    std::shared_ptr<room::room_overrides> overrides_ = std::make_shared<room::room_overrides>();
    std::shared_ptr<gateway::room_admin_backend> admin_backend_;
    std::unique_ptr<admin::admin_server> admin_;

    impl(std::string path, config::snapshot cfg) : path_(std::move(path)) {
        ctx_ = std::make_shared<gateway::shared_context>(cfg, make_clock(*cfg));
    }

    ~impl() {
        admin_.reset();
        stop_threads();
        flush_timers_.clear();
        sync_timer_.reset();
        // The shared context outlives this object in no one else, but make the order explicit:
        // the filter holds the workers' executors, so it goes before their io_contexts.
        ctx_->set_request_filter(std::make_shared<gateway::request_filter>());
        filter_.reset();
        workers_.clear();
    }

    bool start_rooms(const config::snapshot& cfg);
    bool start_admin(const config::config& cfg);

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
        for (unsigned i = 0; i < n; ++i) {
            workers_.push_back(std::make_unique<gateway::worker>(*iocs_[i], ctx_, i));
            workers_.back()->start(resolved.endpoints, cfg->listen);
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

bool server::impl::start_rooms(const config::snapshot& cfg) {
    gateway::node_runtime::inputs in;
    in.overrides = overrides_;
    in.admin = !cfg->admin.listen.empty();
    auto built = gateway::node_runtime::build(cfg, in);
    if (!built.runtime) {
        if (!built.error.empty()) {
            spdlog::error("cannot start: {}", built.error);
        }
        for (const auto& p : built.problems) {
            spdlog::error("{}", p.to_string());
        }
        return false;
    }
    const auto& runtimes = ctx_->runtimes();
    runtimes->publish(built.runtime);

    auto opt = state::make_sync_options(*cfg);
    if (cfg->state.backend == config::state_backend::redis) {
        auto redis = std::make_unique<state::redis_store>(control_.get_executor(),
                                                          state::redis_options_from(cfg->state));
        redis->start();
        store_ = std::move(redis);
        spdlog::info("state store: redis {} (sync every {} ms)", cfg->state.url,
                     cfg->state.sync_interval.count());
    } else {
        store_ = std::make_unique<state::local_store>();
        spdlog::info("state store: local (embedded, one node)");
    }
    sync_ = std::make_unique<state::sync_task>(node_, *store_, opt);
    // Degraded mode (DESIGN.md §4) is announced once when it starts and once when it ends;
    // /readyz and the store_degraded metric read the same state from the sync task.
    sync_->on_degraded_change([](bool degraded, std::int64_t) {
        if (degraded) {
            spdlog::warn(
                "state store unreachable: degraded mode, admitting new visitors only "
                "from this node's local allowance; admitted visitors keep passing");
        } else {
            spdlog::info("state store reachable again: degraded mode over, leases resume");
        }
    });
    // Every sync's round trip goes into the histogram from the control thread's metric slot
    // (shared by the rare sync a worker runs to renew a lapsed lease: the cells are atomic).
    sync_->on_sync_complete([m = metrics_, slot = static_cast<unsigned>(iocs_.size())](
                                std::chrono::nanoseconds took, std::error_code) {
        m->store_sync_latency().observe(slot, std::chrono::duration<double>(took).count());
    });
    sync_->follow_engine([runtimes] { return runtimes->load()->engine; });
    // Run-time switches (admin PATCH) live in the store; each sync brings them to this node.
    sync_->set_overrides(overrides_);

    std::vector<asio::any_io_executor> executors;
    for (auto& ioc : iocs_) {
        executors.push_back(ioc->get_executor());
    }
    filter_ = std::make_shared<gateway::room_filter>(runtimes, node_, *sync_, ctx_->clock(),
                                                     executors, metrics_.get());
    ctx_->set_request_filter(filter_);
    admin_backend_ = std::make_shared<gateway::room_admin_backend>(
        *filter_, node_, *sync_, overrides_, metrics_, static_cast<unsigned>(iocs_.size()),
        ctx_->clock(), store_.get());

    sync_timer_ = std::make_unique<sync_timer>(control_.get_executor(), *sync_,
                                                      ctx_->clock(), cfg->state.sync_interval);
    sync_timer_->start();
    for (unsigned i = 0; i < iocs_.size(); ++i) {
        flush_timers_.push_back(std::make_unique<flush_timer>(
            iocs_[i]->get_executor(), filter_->room_counters(i), cfg->state.sync_interval));
        flush_timers_.back()->start();
    }
    return true;
}

bool server::impl::start_admin(const config::config& cfg) {
    if (cfg.admin.listen.empty()) {
        spdlog::info("admin listener off (admin.listen is empty)");
        return true;
    }
    auto hp = config::parse_host_port(cfg.admin.listen);
    if (!hp) {
        spdlog::error("cannot start: admin.listen: '{}' is not HOST:PORT", cfg.admin.listen);
        return false;
    }
    try {
        asio::ip::tcp::resolver resolver(control_);
        auto found = resolver.resolve(hp->host, std::to_string(hp->port),
                                      asio::ip::tcp::resolver::numeric_service);
        admin_ = std::make_unique<admin::admin_server>(control_, admin_backend_);
        admin_->follow_access([runtimes = ctx_->runtimes()] { return runtimes->load()->admin; });
        admin_->start(found.begin()->endpoint());
    } catch (const std::exception& e) {
        spdlog::error("cannot start: admin.listen {}: {}", cfg.admin.listen, e.what());
        admin_.reset();
        return false;
    }
    spdlog::info("admin listening on {}{}", listener_url(admin_->local_endpoint(), false),
                 ctx_->runtime()->admin->token ? ""
                                                : " (no admin token configured: the admin API is open to loopback "
                               "and answers only loopback Host names or admin.allowed_hosts)");
    return true;
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

void server::impl::reload() {
    config::load_result result;
    try {
        // Not load_config: node_runtime::build below compiles the templates (and reports their
        // problems); compiling them here too did the work twice per reload.
        result = config::load_file(path_);
    } catch (const std::exception& e) {
        spdlog::error("reload failed: {}; keeping the previous configuration", e.what());
        return;
    }
    if (!result.ok()) {
        for (const auto& p : result.problems) {
            spdlog::error("reload: {}", p.to_string());
        }
        spdlog::error("reload failed: {} problem(s) in {}; keeping the previous configuration",
                      result.problems.size(), path_);
        return;
    }
    const auto old_runtime = ctx_->runtime();
    const auto& old = old_runtime->cfg;
    const auto& now = *result.cfg;
    // These are read once at startup; say so rather than pretend they changed.
    if (!same_listeners(old->listen, now.listen)) {
        spdlog::warn("reload: 'listen' changed; listeners change only on restart");
    }
    if (old->threads != now.threads) {
        spdlog::warn("reload: 'threads' changed; takes effect only on restart");
    }
    if (old->logging.access_log != now.logging.access_log) {
        spdlog::warn("reload: 'logging.access_log' changed; takes effect only on restart");
    }
    if (old->testing.time_scale != now.testing.time_scale) {
        spdlog::warn("reload: 'testing.time_scale' changed; takes effect only on restart");
    }
    if (old->origin.url != now.origin.url) {
        spdlog::info("reload: origin {} -> {}", old->origin.url, now.origin.url);
    }
    if (old->state.backend != now.state.backend || old->state.url != now.state.url ||
        old->state.redis_password != now.state.redis_password) {
        spdlog::warn("reload: 'state' changed; the state store changes only on restart");
    }
    if (old->admin.listen != now.admin.listen) {
        spdlog::warn("reload: 'admin.listen' changed; takes effect only on restart");
    }
    gateway::node_runtime::inputs in;
    in.previous = old_runtime;
    in.overrides = overrides_;
    in.admin = admin_ != nullptr;
    auto built = gateway::node_runtime::build(result.cfg, in);
    if (!built.runtime) {
        for (const auto& p : built.problems) {
            spdlog::error("reload: {}", p.to_string());
        }
        if (!built.error.empty()) {
            spdlog::error("reload failed: {}; keeping the previous configuration", built.error);
        } else {
            spdlog::error("reload failed; keeping the previous configuration");
        }
        return;
    }
    if (built.keys_changed) {
        spdlog::info("reload: cookie key ring changed ({} key(s))",
                     built.runtime->keys->keys().size());
    }
    // The listener keeps its address until a restart: a file that moved it to loopback must not
    // open the one still bound elsewhere.
    if (admin_ && !built.runtime->admin->token &&
        !admin_->local_endpoint().address().is_loopback()) {
        spdlog::error(
            "reload failed: admin listener stays on {} until a restart and needs a token there; "
            "keeping the previous configuration",
            listener_url(admin_->local_endpoint(), false));
        return;
    }
    // One switch: from here every worker, the sync task and the admin listener read the new
    // file's runtime.
    ctx_->runtimes()->publish(built.runtime);
    for (const auto& dropped : overrides_->reconcile(*old, now)) {
        spdlog::info("reload: the file changed {}; its run-time override is dropped", dropped);
    }
    // The store holds the switches for every node: clear the keys the file changed there too,
    // or the next sync would bring them back. Other nodes drop them at their next sync.
    for (const auto& c : room::room_overrides::changes(*old, now)) {
        state::override_write w;
        w.room = c.room;
        w.queue_all = c.queue_all ? state::switch_write::unset : state::switch_write::keep;
        w.suspended = c.suspended ? state::switch_write::unset : state::switch_write::keep;
        store_->write_overrides(std::move(w), [room = c.room](state::override_result res) {
            if (res.ec) {
                spdlog::warn(
                    "reload: cannot clear the run-time switches of room {} in the state "
                    "store ({}); the next sync may bring them back",
                    room, res.ec.message());
            }
        });
    }
    apply_level(now.logging.level);
    if (old->logging.level != now.logging.level) {
        log_level_changed(old->logging.level, now.logging.level);
    }
    spdlog::info("configuration reloaded from {}: rooms: {} (were: {})", path_, room_ids(now),
                 room_ids(*old));
}

void server::impl::begin_shutdown(const char* why) {
    if (finishing_) {
        return;
    }
    if (draining_) {
        spdlog::warn("{} received again: closing every connection now", why);
        finish_shutdown();
        return;
    }
    draining_ = true;
    if (admin_backend_) {
        admin_backend_->set_draining();
    }
    auto timeout = ctx_->config()->limits.drain_timeout;
    drain_deadline_ = std::chrono::steady_clock::now() + timeout;
    spdlog::info("{} received: draining (up to {} ms for in-flight requests)", why,
                 timeout.count());
    on_every_worker([](gateway::worker& w) { w.drain(); }, [this] { poll_drain(); });
}

void server::impl::poll_drain() {
    if (finishing_) {
        return;
    }
    std::size_t open = 0;
    for (const auto& w : workers_) {
        open += w->open_connections();
    }
    if (open == 0) {
        spdlog::info("drained: no connection left open");
        finish_shutdown();
        return;
    }
    if (std::chrono::steady_clock::now() >= drain_deadline_) {
        spdlog::warn("drain timeout: closing {} connection(s) still open", open);
        finish_shutdown();
        return;
    }
    drain_timer_.expires_after(drain_poll_interval);
    drain_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
            poll_drain();
        }
    });
}

void server::impl::finish_shutdown() {
    finishing_ = true;
    drain_timer_.cancel();
    if (admin_) {
        admin_->stop();
    }
    on_every_worker([](gateway::worker& w) { w.close_all(); },
                    [this] {
                        signals_.cancel();
                        control_.stop();
                    });
}

void server::impl::on_every_worker(std::function<void(gateway::worker&)> fn,
                                   std::function<void()> done) {
    auto remaining = std::make_shared<std::size_t>(workers_.size());
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        asio::post(*iocs_[i], [this, i, fn, remaining, shared_done] {
            fn(*workers_[i]);
            // The count is touched only on the control thread.
            asio::post(control_, [remaining, shared_done] {
                if (--*remaining == 0) {
                    (*shared_done)();
                }
            });
        });
    }
    if (workers_.empty()) {
        asio::post(control_, [shared_done] { (*shared_done)(); });
    }
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
