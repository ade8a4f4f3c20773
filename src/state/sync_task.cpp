#include "waitroom/state/sync_task.hpp"

#include <algorithm>

#include "waitroom/state/error.hpp"

namespace waitroom::state {

sync_options make_sync_options(const config::config& cfg) {
    sync_options o;
    o.node_id = cfg.node.id.empty() ? std::string("node") : cfg.node.id;
    o.datacenter = cfg.node.datacenter;
    o.interval_ms = std::max<std::int64_t>(1, cfg.state.sync_interval.count());
    o.node_ttl_ms = 3 * o.interval_ms;
    o.lease_ttl_ms = 2 * o.interval_ms;
    // The local store answers in microseconds; a networked one is asked at most once per
    // interval per room after it had nothing to give.
    o.top_up_retry_ms = cfg.state.backend == config::state_backend::local ? 0 : o.interval_ms;
    return o;
}

sync_task::sync_task(room::node_state& node, store& st, sync_options opt)
    : node_(node), store_(st), opt_(std::move(opt)) {}

void sync_task::set_engine(std::shared_ptr<const room::engine> e) {
    std::lock_guard lock(mu_);
    engine_ = std::move(e);
}

void sync_task::run_once(std::int64_t now_ms, std::function<void(std::error_code)> done) {
    std::shared_ptr<const room::engine> eng;
    std::map<std::string, std::int64_t> releases;
    {
        std::lock_guard lock(mu_);
        if (in_flight_) {
            if (done) {
                done(errc::busy);
            }
            return;
        }
        if (!engine_) {
            if (done) {
                done(errc::no_engine);
            }
            return;
        }
        in_flight_ = true;
        eng = engine_;
        releases.swap(pending_release_);
    }

    room::delta_set deltas = node_.take_deltas();
    node_report report;
    report.node_id = opt_.node_id;
    report.datacenter = opt_.datacenter;
    report.now_ms = now_ms;
    report.node_ttl_ms = opt_.node_ttl_ms;
    std::map<std::string, room::room_limits> limits;
    for (const auto& r : eng->rooms()) {
        room_report rr;
        rr.room = r.id();
        rr.limits = r.limits_at(now_ms);
        if (auto it = deltas.find(r.id()); it != deltas.end()) {
            rr.deltas = std::move(it->second);
        }
        room::slot_pool& pool = node_.pool(r.id());
        // An expired lease is given back whole: the store may have forgotten it already, and
        // if not, this keeps its count of held slots right.
        std::int64_t give_back =
            rr.limits.needs_slots && !pool.expired(now_ms) ? releases[r.id()] : pool.available();
        if (give_back > 0) {
            rr.slots_returned = pool.take_up_to(give_back);
        }
        limits[r.id()] = rr.limits;
        report.rooms.push_back(std::move(rr));
    }
    // Deltas of rooms removed by a reload are dropped with the room.

    std::vector<room_report> sent = report.rooms;  // kept to undo on failure
    store_.sync(
        std::move(report), [this, now_ms, limits = std::move(limits), sent = std::move(sent),
                            done = std::move(done)](sync_result res) mutable {
            on_synced(now_ms, std::move(limits), std::move(sent), std::move(res), std::move(done));
        });
}

void sync_task::on_synced(std::int64_t now_ms, std::map<std::string, room::room_limits> limits,
                          std::vector<room_report> sent, sync_result res,
                          std::function<void(std::error_code)> done) {
    if (res.ec || res.rooms.size() != sent.size()) {
        // The store did not apply anything: keep the deltas for the next sync and the slots we
        // meant to return. The lease lapses by itself (slot_pool::expired) and is handed back
        // whole at the next successful sync, so the store's count of held slots stays right.
        room::delta_set back;
        for (auto& r : sent) {
            node_.pool(r.room).add(r.slots_returned);
            back[r.room] = std::move(r.deltas);
        }
        node_.submit(back);
        {
            std::lock_guard lock(mu_);
            in_flight_ = false;
        }
        if (done) {
            done(res.ec ? res.ec : make_error_code(errc::protocol));
        }
        return;
    }

    auto snap = std::make_shared<room::state_snapshot>();
    snap->as_of_ms = now_ms;
    std::map<std::string, std::int64_t> releases;
    std::map<std::string, std::int64_t> demand;
    for (std::size_t i = 0; i < res.rooms.size(); ++i) {
        auto& g = res.rooms[i];
        room::slot_pool& pool = node_.pool(g.room);
        pool.add(g.granted);
        pool.extend_until(now_ms + opt_.lease_ttl_ms);
        pool.suspend_top_ups_until(0);  // fresh state: a dry pool may ask again
        if (g.release > 0) {
            releases[g.room] = g.release;
        }
        demand[g.room] = sent[i].deltas.demand;
        snap->rooms.emplace(g.room, room::room_state(std::move(g.counts), limits[g.room]));
    }
    node_.publish(std::move(snap));
    {
        std::lock_guard lock(mu_);
        in_flight_ = false;
        last_success_ms_ = now_ms;
        ++syncs_;
        pending_release_ = std::move(releases);
        last_demand_ = std::move(demand);
    }
    if (done) {
        done({});
    }
}

void sync_task::top_up(const std::string& room_id, std::int64_t now_ms,
                       std::function<void(bool)> done) {
    room::slot_pool& own = node_.pool(room_id);
    if (own.expired(now_ms)) {
        // The lease itself lapsed (no sync for a while): renewing it is a whole sync, which
        // also settles the slots the store may have forgotten. Same single round trip.
        run_once(now_ms, [&own, now_ms, done = std::move(done)](std::error_code ec) {
            if (done) {
                done(!ec && !own.expired(now_ms) && own.available() > 0);
            }
        });
        return;
    }
    top_up_request req;
    {
        std::lock_guard lock(mu_);
        auto& waiters = top_up_waiters_[room_id];
        waiters.push_back(std::move(done));
        if (waiters.size() > 1) {
            return;  // one store call per room at a time; this caller shares its answer
        }
        const room::compiled_room* r = engine_ ? engine_->find(room_id) : nullptr;
        if (r == nullptr) {
            auto w = std::move(waiters);
            top_up_waiters_.erase(room_id);
            for (auto& f : w) {
                if (f) {
                    f(false);
                }
            }
            return;
        }
        req.limits = r->limits_at(now_ms);
        auto it = last_demand_.find(room_id);
        req.want = std::max(opt_.top_up_min, it == last_demand_.end() ? 0 : it->second);
        ++top_ups_;
    }
    req.node_id = opt_.node_id;
    req.datacenter = opt_.datacenter;
    req.room = room_id;
    req.now_ms = now_ms;
    store_.top_up(std::move(req), [this, room_id, now_ms](top_up_result res) {
        room::slot_pool& pool = node_.pool(room_id);
        bool got = !res.ec && res.granted > 0;
        if (got) {
            pool.add(res.granted);
            pool.extend_until(now_ms + opt_.lease_ttl_ms);  // the store just saw this node
        } else {
            pool.suspend_top_ups_until(now_ms + opt_.top_up_retry_ms);
        }
        std::vector<std::function<void(bool)>> waiters;
        {
            std::lock_guard lock(mu_);
            waiters = std::move(top_up_waiters_[room_id]);
            top_up_waiters_.erase(room_id);
        }
        for (auto& f : waiters) {
            if (f) {
                f(got);
            }
        }
    });
}

bool sync_task::degraded(std::int64_t now_ms) const {
    std::lock_guard lock(mu_);
    return now_ms - last_success_ms_ > opt_.lease_ttl_ms;
}

std::int64_t sync_task::last_success_ms() const {
    std::lock_guard lock(mu_);
    return last_success_ms_;
}

std::uint64_t sync_task::syncs() const {
    std::lock_guard lock(mu_);
    return syncs_;
}

std::uint64_t sync_task::top_ups() const {
    std::lock_guard lock(mu_);
    return top_ups_;
}

}  // namespace waitroom::state
