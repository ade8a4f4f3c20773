// Top-ups (DESIGN.md §4): a room whose pool ran dry asks the store for more slots. Concurrent
// requests for a room wait on one store call, which asks again while they outnumber the slots
// it got.

#include "waitroom/state/sync_task.hpp"

#include <algorithm>

namespace waitroom::state {

namespace {
// The next top-up before a sync asks for twice the last one, up to 2^31 (more than any room
// holds): a flood through a long store outage, or a chain of partial grants, asks again and
// again before any sync, and must not overflow.
std::int64_t twice_asked(std::int64_t asked) {
    return 2 * std::clamp<std::int64_t>(asked, 0, std::int64_t{1} << 30);
}
}  // namespace

void sync_task::top_up(const std::string& room_id, std::int64_t now_ms,
                       std::function<void(bool)> done) {
    room::slot_pool& own = node_.pool(room_id);
    bool in_degraded_mode = false;
    {
        std::lock_guard lock(mu_);
        // (or failing this room alone: its top-ups would fail as its syncs do)
        in_degraded_mode = degraded_since_ms_ != 0 || episodes_by_room_.contains(room_id);
    }
    if (in_degraded_mode) {
        // The store is down: the sync timer finds out when it is back. Asking it per request
        // would tie the store's load to the request rate just when it is struggling.
        own.suspend_top_ups_until(now_ms + opt_.interval_ms);
        if (done) {
            done(false);
        }
        return;
    }
    if (own.expired(now_ms)) {
        renew_then_top_up(room_id, now_ms, std::move(done), false);
        return;
    }
    bool unsettled = false;
    {
        std::lock_guard lock(mu_);
        unsettled = lost_top_ups_.contains(room_id);
    }
    if (unsettled) {
        // The last top-up's answer never came: none until the next sync has settled it.
        own.suspend_top_ups_until(now_ms + opt_.top_up_retry_ms);
        if (done) {
            done(false);
        }
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
        const auto eng = engine_ ? engine_() : nullptr;
        const room::compiled_room* r = eng ? eng->find(room_id) : nullptr;
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
        if (auto e = epochs_.find(room_id); e != epochs_.end()) {
            req.epoch = e->second;
        }
        auto it = last_demand_.find(room_id);
        // At least the last interval's demand; each further top-up before the next sync asks
        // for twice the last one (twice_asked). At the start of a spike the last interval's
        // demand is about 1, and top-ups of 1 queued visitors while the store still had free
        // slots.
        std::int64_t& asked = top_up_asked_[room_id];
        req.want = std::max({opt_.top_up_min, it == last_demand_.end() ? 0 : it->second,
                             twice_asked(asked)});
        asked = req.want;
        req.need = 1;  // this caller alone: the others join while the call is out (above)
        req.id = next_top_up_++;
        ++top_ups_;
        ++top_ups_by_room_[room_id];
    }
    req.node_id = opt_.node_id;
    req.datacenter = opt_.datacenter;
    req.room = room_id;
    req.now_ms = now_ms;
    ask_store(std::move(req));
}

void sync_task::renew_then_top_up(const std::string& room_id, std::int64_t now_ms,
                                  std::function<void(bool)> done, bool waited) {
    // The lease itself lapsed (no sync for a while): renewing it is a whole sync, which also
    // settles the slots the store may have forgotten. When the renewed lease is still empty (an
    // idle node leases nothing), the top-up follows it.
    room::slot_pool& own = node_.pool(room_id);
    run_once(now_ms, [this, &own, room_id, now_ms, waited,
                      done = std::move(done)](std::error_code ec) mutable {
        if (ec == errc::busy && !waited) {
            // The timer's sync is out, and its answer renews the lease too: wait for it, once.
            // Taking "busy" for "the store had nothing" queued a visitor in a room with room (a
            // lapsed lease at startup, or behind a timer late on a loaded machine).
            std::unique_lock lock(mu_);
            if (!in_flight_) {
                lock.unlock();
                after_renewal(room_id, now_ms, std::move(done));  // it ended meanwhile
            } else if (after_flight_.size() < max_after_flight) {
                after_flight_.emplace_back(
                    [this, room_id, now_ms, done = std::move(done)]() mutable {
                        after_renewal(room_id, now_ms, std::move(done));
                    });  // parked: the sync's answer runs it
            } else {
                lock.unlock();
                if (done) {
                    done(false);
                }
            }
            return;
        }
        if (ec || own.expired(now_ms)) {
            // The store failed, or did not renew this room (failed alone, or reloaded away).
            if (done) {
                done(false);
            }
            return;
        }
        after_renewal(room_id, now_ms, std::move(done));
    });
}

void sync_task::after_renewal(const std::string& room_id, std::int64_t now_ms,
                              std::function<void(bool)> done) {
    room::slot_pool& own = node_.pool(room_id);
    if (own.expired(now_ms)) {
        renew_then_top_up(room_id, now_ms, std::move(done), true);
    } else if (own.available() > 0) {
        if (done) {
            done(true);
        }
    } else if (own.top_up_allowed(now_ms)) {
        top_up(room_id, now_ms, std::move(done));
    } else if (done) {
        done(false);  // another waiter's top-up found the store empty just now
    }
}

void sync_task::ask_store(top_up_request req) {
    const std::string room_id = req.room;
    const std::int64_t now_ms = req.now_ms;
    // Renewals handed over since the last sync out of windows the store has let go: the places
    // of visitors still here, which the store would otherwise grant to someone else. (A worker
    // hands a renewal over at once when its window ends within two intervals: engine::decide.)
    // Judged a second ahead: a node whose clock runs ahead lets windows go that much earlier.
    req.unreported = node_.unreported_renewals(room_id, req.limits, now_ms + 1000);
    top_up_request again = req;  // kept for a follow-up ask
    store_.top_up(std::move(req), [this, room_id, now_ms,
                                   again = std::move(again)](top_up_result res) mutable {
        room::slot_pool& pool = node_.pool(room_id);
        bool got = !res.ec && res.granted > 0;
        if (res.ec) {
            std::lock_guard lock(mu_);
            lost_top_ups_[room_id] = again.id;  // it may have been granted all the same
        }
        if (got) {
            {
                std::lock_guard lock(mu_);
                topped_up_[room_id] += res.granted;  // not idle yet at the next report
            }
            pool.add(res.granted);
            pool.extend_until(now_ms + opt_.lease_ttl_ms);  // the store just saw this node
        } else {
            pool.suspend_top_ups_until(now_ms + opt_.top_up_retry_ms);
        }
        std::vector<std::function<void(bool)>> waiters;
        bool ask_again = false;
        {
            std::lock_guard lock(mu_);
            auto& w = top_up_waiters_[room_id];
            const auto short_by = static_cast<std::int64_t>(w.size()) - pool.available();
            if (got && short_by > 0) {
                // More visitors joined this call than it got slots for, and the store gave some:
                // ask again for them rather than queue them while it may have more (it gives a
                // node at most half of its unheld slots at a time when other nodes are live).
                std::int64_t& asked = top_up_asked_[room_id];
                again.want = std::max(twice_asked(asked), short_by);
                asked = again.want;
                again.need = short_by;
                again.id = next_top_up_++;
                ++top_ups_;
                ++top_ups_by_room_[room_id];
                ask_again = true;
            } else {
                waiters = std::move(w);
                top_up_waiters_.erase(room_id);
            }
        }
        if (ask_again) {
            ask_store(std::move(again));  // outside the lock: a local store answers inline
            return;
        }
        const bool any = got || pool.available() > 0;
        for (auto& f : waiters) {
            if (f) {
                f(any);
            }
        }
    });
}

std::uint64_t sync_task::top_ups() const {
    std::lock_guard lock(mu_);
    return top_ups_;
}

std::uint64_t sync_task::top_ups(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    auto it = top_ups_by_room_.find(room_id);
    return it == top_ups_by_room_.end() ? 0 : it->second;
}

}  // namespace waitroom::state
