#pragma once
// State the admin server shares with its sessions: routes, options, the current token, and the
// open sessions (so that stop() can close them and max_connections can be enforced).

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "admin_routes.hpp"
#include "waitroom/admin/admin_server.hpp"
#include "waitroom/admin/admin_token.hpp"

namespace waitroom::admin {

class admin_session;

struct admin_shared {
    admin_shared(std::shared_ptr<admin_backend> backend, admin_options opts)
        : routes(std::move(backend)), options(opts) {}

    admin_routes routes;
    admin_options options;
    // Swapped whole on reload; a request keeps the rules it was checked against.
    std::atomic<std::shared_ptr<const admin_access>> access{std::make_shared<const admin_access>()};
    admin_server::access_source access_source;  // set before start; wins when it answers

    // Once a source is set, it alone decides: a null answer refuses everything (never the open
    // default of `access`).
    std::shared_ptr<const admin_access> current_access() const {
        if (access_source) {
            auto a = access_source();
            return a ? a : admin_access::refuse_all();
        }
        return access.load(std::memory_order_acquire);
    }

    void remember(admin_session* s, std::weak_ptr<admin_session> w) {
        std::lock_guard lock(mutex_);
        sessions_.emplace(s, std::move(w));
    }
    void forget(admin_session* s) {
        std::lock_guard lock(mutex_);
        sessions_.erase(s);
    }
    std::size_t open() const {
        std::lock_guard lock(mutex_);
        return sessions_.size();
    }
    // Locks only to copy; the caller closes them after.
    std::vector<std::shared_ptr<admin_session>> all() const {
        std::vector<std::shared_ptr<admin_session>> out;
        std::lock_guard lock(mutex_);
        for (const auto& [p, w] : sessions_) {
            if (auto s = w.lock()) {
                out.push_back(std::move(s));
            }
        }
        return out;
    }

  private:
    mutable std::mutex mutex_;
    std::unordered_map<admin_session*, std::weak_ptr<admin_session>> sessions_;
};

}  // namespace waitroom::admin
