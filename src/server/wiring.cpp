// Starting the waiting room (the first runtime, the state store, the sync task, the room filter
// and the timers) and the admin listener.
#include "server_impl.hpp"

#include <spdlog/spdlog.h>

#include "endpoints.hpp"
#include "waitroom/config/values.hpp"
#include "waitroom/gateway/node_runtime.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/redis_store.hpp"

#include <boost/asio/ip/tcp.hpp>

namespace waitroom::server {

bool server::impl::start_rooms(const config::snapshot& cfg) {
    gateway::node_runtime::inputs in;
    in.overrides = overrides_;
    in.admin = !cfg->admin.listen.empty();
    in.health = origin_health_;
    in.metrics = metrics_.get();
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
    origin_monitor_ = std::make_shared<gateway::origin_monitor>(
        control_.get_executor(), metrics_.get(), static_cast<unsigned>(iocs_.size()));
    origin_health_->on_change([weak = std::weak_ptr(origin_monitor_)] {
        if (auto monitor = weak.lock()) {
            monitor->wake();
        }
    });
    origin_monitor_->watch(built.runtime->origins, cfg->origin);

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
    // A room the store fails alone (a clobbered key): once when it starts, once when it ends.
    sync_->on_room_failing([](const std::string& room, bool failing, std::error_code ec) {
        if (failing) {
            spdlog::warn(
                "room {}: the state store failed its sync ({}) while it answered the other "
                "rooms; resending it, and past the lease TTL the room admits new visitors only "
                "from this node's local allowance (check its Redis keys, e.g. TYPE and memory)",
                room, ec.message());
        } else {
            spdlog::info("room {}: the state store applies its syncs again", room);
        }
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
    // Every sync's round trip goes into the histogram from the control thread's metric slot
    // (shared by the rare sync a worker runs to renew a lapsed lease: the cells are atomic),
    // and each sync takes a reading of the rooms' analytics into their minute rows.
    sync_->on_sync_complete(
        [m = metrics_, slot = static_cast<unsigned>(iocs_.size()),
         backend = std::weak_ptr(admin_backend_)](std::chrono::nanoseconds took, std::error_code) {
            m->store_sync_latency().observe(slot, std::chrono::duration<double>(took).count());
            if (auto b = backend.lock()) {
                b->record_history();
            }
        });

    std::vector<worker_counters> counters;
    for (unsigned i = 0; i < iocs_.size(); ++i) {
        counters.push_back({iocs_[i]->get_executor(), &filter_->room_counters(i)});
    }
    sync_timer_ = std::make_unique<sync_timer>(control_.get_executor(), *sync_, ctx_->clock(),
                                               cfg->state.sync_interval, std::move(counters));
    sync_timer_->start();
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
                 ctx_->runtime()->admin->token
                     ? ""
                     : " (no admin token configured: the admin API is open to loopback "
                       "and answers only loopback Host names or admin.allowed_hosts)");
    return true;
}

}  // namespace waitroom::server
