#include "waitroom/gateway/origin_group.hpp"

#include <algorithm>

namespace waitroom::gateway {

namespace {

// The time out of the ejection after `level` ejections in a row: base, doubled each time, up to
// max (the shift is bounded so that it cannot overflow).
std::chrono::milliseconds back_off(const ejection_rules& rules, unsigned level) {
    auto d = rules.base;
    for (unsigned i = 0; i < level && d < rules.max; ++i) {
        d *= 2;
    }
    return std::min(d, rules.max);
}

}  // namespace

bool server_health::record_failure(server_failure f, const ejection_rules& rules,
                                   bool others_available, health_clock::time_point now) {
    if (rules.eject_after == 0) {
        return false;
    }
    if (f != server_failure::server_error) {
        hard_.store(true, order);
    }
    const unsigned in_a_row = failures_.fetch_add(1, order) + 1;
    if (in_a_row < rules.eject_after && !probation_.load(order)) {
        return false;
    }
    if (!hard_.load(order) && !others_available) {
        return false;  // 5xx alone: the last server that answers stays
    }
    const std::int64_t now_ticks = now.time_since_epoch().count();
    std::int64_t until = ejected_until_.load(order);
    if (until > now_ticks) {
        return false;  // out already: a failure of a request that started before
    }
    const unsigned level = level_.load(order);
    const auto out_for = std::chrono::duration_cast<health_clock::duration>(back_off(rules, level));
    // One thread ejects: others that found the streak long enough at the same instant lose here.
    if (!ejected_until_.compare_exchange_strong(until, now_ticks + out_for.count(), order)) {
        return false;
    }
    level_.store(std::min(level + 1, 31u), order);
    failures_.store(0, order);
    hard_.store(false, order);
    probation_.store(true, order);
    ejections_.fetch_add(1, order);
    return true;
}

server_health& origin_health::server(const std::string& url) {
    std::lock_guard lock(mu_);
    auto& slot = servers_[url];
    if (!slot) {
        slot = std::make_unique<server_health>();
    }
    return *slot;
}

origin_group::origin_group(const config::origin& o, std::shared_ptr<origin_health> health,
                           metrics::metric_set* m)
    : health_(std::move(health)),
      rules_{o.eject_after, o.eject_time, o.max_eject_time},
      checks_(o.health_check) {
    for (auto& s : config::server_list(o)) {
        member mb;
        mb.health = &health_->server(s.url);
        mb.metrics = m != nullptr ? &m->origin_server(s.url) : nullptr;
        mb.server = std::move(s);
        members_.push_back(std::move(mb));
    }
}

bool origin_group::any_available(health_clock::time_point now, const server_health* except) const {
    return std::any_of(members_.begin(), members_.end(), [&](const member& m) {
        return m.health != except && m.health->available(now);
    });
}

bool origin_group::refresh_gate(health_clock::time_point now) const {
    const bool open = any_available(now);
    health_->gate()->set_open(open);
    return open;
}

void origin_group::record_success(const member& m) const {
    if (m.health->record_success() && m.health->checks_pass()) {
        health_->gate()->set_open(true);
        health_->changed();
    }
}

bool origin_group::record_failure(const member& m, server_failure f,
                                  health_clock::time_point now) const {
    const bool others = any_available(now, m.health);
    if (!m.health->record_failure(f, rules_, others, now)) {
        return false;
    }
    if (!others) {
        health_->gate()->set_open(false);
    }
    health_->changed();
    return true;
}

}  // namespace waitroom::gateway
