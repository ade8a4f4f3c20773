#include "client_registry.hpp"

#include <algorithm>
#include <utility>

#include "worker_context.hpp"

namespace waitroom::gateway {

// ---- connection_place ---------------------------------------------------------------------

connection_place::connection_place(client_registry& registry, session_base& owner)
    : registry_(registry), owner_(&owner) {}

connection_place::~connection_place() {
    leave();
    if (claimed_) {
        registry_.counts_.give(client_);
    }
}

bool connection_place::claim_peer(const client_identity& identity, const config::config& cfg) {
    if (identity.peer_is_trusted(cfg)) {
        return true;  // a proxy: the client is known from the first request's head
    }
    return claim(identity.peer_bytes(), cfg);
}

bool connection_place::claim(const std::optional<ip_bytes>& client, const config::config& cfg) {
    if (std::exchange(attributed_, true)) {
        return true;
    }
    const std::size_t cap = config::per_client_cap(cfg.limits);
    if (cap == 0 || !client) {
        return true;
    }
    client_ = client_slots::client_of(*client);
    claimed_ = registry_.counts_.take(client_, cap);
    if (!claimed_) {
        registry_.count(metrics::connection_shed::per_client);
    }
    return claimed_;
}

void connection_place::take_over(connection_place& from) {
    client_ = from.client_;
    claimed_ = std::exchange(from.claimed_, false);
    attributed_ = from.attributed_;
    from.leave();
}

void connection_place::idle() {
    if (state_ != state::idle) {
        leave();
        registry_.idle_.push_back(*this);
        state_ = state::idle;
    }
    if (registry_.near_limit()) {
        registry_.close_oldest_idle();
    }
}

void connection_place::hold_head(std::size_t bytes, std::size_t budget) {
    if (state_ != state::head) {
        leave();
        registry_.heads_.push_back(*this);
        state_ = state::head;
    }
    registry_.head_bytes_ = registry_.head_bytes_ - head_bytes_ + bytes;
    head_bytes_ = bytes;
    if (registry_.head_bytes_ > budget) {
        registry_.give_up_heads(budget);
    }
}

void connection_place::busy() {
    leave();
}

void connection_place::leave() {
    hook_.unlink();
    registry_.head_bytes_ -= head_bytes_;
    head_bytes_ = 0;
    state_ = state::busy;
}

// ---- client_registry ----------------------------------------------------------------------

client_registry::client_registry(const std::atomic<std::size_t>& open, metrics::metric_set* m,
                                 unsigned worker)
    : open_(open), metrics_(m), worker_(worker) {}

std::size_t client_registry::reserve(std::size_t max_connections) {
    return std::max<std::size_t>(max_connections / 64, 1);
}

void client_registry::accepted(std::size_t max_connections) {
    limit_ = max_connections;
    if (near_limit()) {
        close_oldest_idle();
    }
}

std::size_t client_registry::held(const ip_bytes& client) const {
    return counts_.held(client_slots::client_of(client));
}

bool client_registry::near_limit() const {
    return limit_ > 0 && open_.load(std::memory_order_relaxed) + reserve(limit_) >= limit_;
}

// The place leaves its list before its session hears of it: the session may call back into
// the registry from close() or give_up_head().
void client_registry::close_oldest_idle() {
    if (idle_.empty()) {
        return;
    }
    auto& oldest = idle_.front();
    oldest.leave();
    count(metrics::connection_shed::idle);
    oldest.owner_->close();
}

void client_registry::give_up_heads(std::size_t budget) {
    while (head_bytes_ > budget && !heads_.empty()) {
        auto& earliest = heads_.front();
        earliest.leave();
        count(metrics::connection_shed::header_budget);
        earliest.owner_->give_up_head();
    }
}

void client_registry::count(metrics::connection_shed why) {
    if (metrics_ != nullptr) {
        metrics_->client_connections_shed(why).inc(worker_);
    }
}

}  // namespace waitroom::gateway
