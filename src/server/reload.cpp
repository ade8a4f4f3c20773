// A reload (SIGHUP): the new file is read and checked whole, then published in one switch; what
// only a restart changes is said so.
#include "server_impl.hpp"

#include <spdlog/spdlog.h>

#include "endpoints.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/gateway/node_runtime.hpp"
#include "waitroom/server/logging.hpp"

#include <algorithm>

namespace waitroom::server {

namespace {

bool same_listeners(const std::vector<config::listener>& a,
                    const std::vector<config::listener>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        // Certificates, TLS versions and ciphers are reloaded (reload_certificates); the
        // address and whether it is TLS, and the protocol switches, are the sockets'.
        return x.host == y.host && x.port == y.port && x.tls.has_value() == y.tls.has_value() &&
               x.proxy_protocol == y.proxy_protocol && x.http2 == y.http2 && x.h2c == y.h2c;
    });
}

}  // namespace

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
    if (old->origin.url != now.origin.url ||
        old->origin.servers.size() != now.origin.servers.size()) {
        spdlog::info("reload: origin {} ({} server(s)) -> {} ({} server(s))", old->origin.url,
                     config::server_list(old->origin).size(), now.origin.url,
                     config::server_list(now.origin).size());
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
    in.health = origin_health_;
    in.metrics = metrics_.get();
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
    origin_monitor_->watch(built.runtime->origins, now.origin);
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
    reload_certificates(now);
    apply_level(now.logging.level);
    if (old->logging.level != now.logging.level) {
        log_level_changed(old->logging.level, now.logging.level);
    }
    spdlog::info("configuration reloaded from {}: rooms: {} (were: {})", path_, room_ids(now),
                 room_ids(*old));
}

}  // namespace waitroom::server
