#include "origin_servers.hpp"

#include "origin_connection.hpp"

namespace waitroom::gateway {

origin_servers::origin_servers(executor_type ex, metrics::metric_set* metrics, unsigned slot)
    : ex_(std::move(ex)), metrics_(metrics), slot_(slot), random_(std::random_device{}() + slot) {}

void origin_servers::configure(std::shared_ptr<const origin_group> group, const config::origin& o) {
    std::vector<std::shared_ptr<origin_target>> next;
    for (const auto& m : group->members()) {
        std::shared_ptr<origin_target> t;
        for (auto& old : targets_) {
            if (old && old->member->server.url == m.server.url) {
                t = std::move(old);
                break;
            }
        }
        if (!t) {
            t = std::make_shared<origin_target>();
            t->pool = std::make_shared<origin_pool>(ex_, metrics_, slot_);
        }
        t->pool->configure(config::for_server(o, m.server));
        t->group = group;
        t->member = &m;
        next.push_back(std::move(t));
    }
    for (auto& old : targets_) {
        if (old) {
            old->pool->close_idle();  // a server the file no longer names
        }
    }
    targets_ = std::move(next);
    entries_.assign(targets_.size(), balance_entry{});
    for (std::size_t i = 0; i < targets_.size(); ++i) {
        entries_[i].weight = targets_[i]->member->server.weight;
    }
    policy_ = o.balance;
}

bool origin_servers::serves(const config::origin& o) const {
    const auto servers = config::server_list(o);
    if (servers.size() != targets_.size()) {
        return false;
    }
    for (std::size_t i = 0; i < servers.size(); ++i) {
        if (!targets_[i]->pool->serves(config::for_server(o, servers[i]))) {
            return false;
        }
    }
    return true;
}

std::shared_ptr<origin_target> origin_servers::pick(const origin_target* avoid) {
    if (targets_.size() == 1) {
        // One server: nothing to choose, and a retry has nowhere else to go.
        if (targets_[0].get() == avoid) {
            return nullptr;
        }
        ++targets_[0]->in_flight;
        return targets_[0];
    }
    const auto now = health_clock::now();
    std::size_t avoid_index = no_server;
    for (std::size_t i = 0; i < targets_.size(); ++i) {
        entries_[i].in_flight = targets_[i]->in_flight;
        entries_[i].available = targets_[i]->member->health->available(now);
        if (targets_[i].get() == avoid) {
            avoid_index = i;
        }
    }
    const std::size_t i = pick_server(policy_, entries_, avoid_index, random_);
    if (i == no_server) {
        return nullptr;
    }
    ++targets_[i]->in_flight;
    return targets_[i];
}

void origin_servers::release(std::shared_ptr<origin_connection> c, bool reusable) {
    if (!c) {
        return;
    }
    if (auto home = c->home.lock()) {
        return home->release(std::move(c), reusable);
    }
    c->close();
    if (c->counted && metrics_ != nullptr) {
        c->counted = false;
        metrics_->origin_connections().sub(slot_, 1);
    }
}

void origin_servers::close_idle() {
    for (auto& t : targets_) {
        t->pool->close_idle();
    }
}

}  // namespace waitroom::gateway
