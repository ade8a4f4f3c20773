// Degraded mode (DESIGN.md §4): a failed sync past the lease TTL starts an episode, sets the
// lapsed lease aside and refills each room's pool from a local allowance; the next successful
// sync ends the episode. Also the failure counters and the accessors for metrics and /readyz.

#include "waitroom/state/sync_task.hpp"

#include <algorithm>
#include <cmath>

#include "waitroom/room/limits.hpp"

namespace waitroom::state {

void sync_task::on_failed(std::int64_t now_ms, const std::vector<room_report>& sent, bool alone) {
    // The last state the store gave: only a successful sync publishes a snapshot (a room failed
    // alone keeps its last one in it).
    const auto last_known = node_.snapshot();
    bool entered = false;
    {
        std::lock_guard lock(mu_);
        if (!alone) {
            ++failed_syncs_;
            ++consecutive_failures_;
            if (now_ms - last_success_ms_ <= opt_.lease_ttl_ms) {
                return;  // the lease is still good: the next sync may well succeed
            }
            if (degraded_since_ms_ == 0) {
                degraded_since_ms_ = now_ms;
                ++episodes_;
                entered = true;
            }
        }
        for (const auto& r : sent) {
            room::slot_pool& pool = node_.pool(r.room);
            auto [it, fresh] = episodes_by_room_.try_emplace(r.room);
            episode& ep = it->second;
            if (fresh) {
                // The lease lapsed: keep it aside to hand back, and size the allowance from
                // the last state the store gave. Without one the node knows nothing of the
                // room (started while the store was down) and admits nobody new.
                ep.lapsed = pool.take_up_to(pool.available());
                ep.pool_after = pool.available();
                ep.share = 0;
                const room::room_state* known = last_known->find(r.room);
                if (opt_.degraded_allowance && known != nullptr) {
                    ep.share =
                        1.0 / static_cast<double>(std::max<std::uint32_t>(1, known->nodes()));
                    std::int64_t own_admitted = 0;  // since the last success, not in `known`
                    for (const auto& [w, n] : r.deltas.admitted.entries()) {
                        own_admitted += n;
                    }
                    own_admitted = std::max<std::int64_t>(0, own_admitted);
                    const auto free_active = std::max<std::int64_t>(
                        0, r.limits.total_active_users - known->counts().active);
                    ep.known_active = known->counts().active;
                    ep.own_before = own_admitted;
                    ep.budget = std::max<std::int64_t>(
                        0, static_cast<std::int64_t>(ep.share * static_cast<double>(free_active)) -
                               own_admitted);
                    // The room's admissions of the last known minute by sub-window, and this
                    // node's own part of them (what it reported): each leaves the minute at its
                    // time, so the allowance grows back as the minute ages instead of starting
                    // a whole minute behind (a 30 s outage at the limit admitted nobody). A
                    // store that sends no sub-windows (an older script) gives the minute's
                    // sum: dated at its time, it leaves the minute no earlier than it really
                    // does. The slots leased then count all episode, since any node may have
                    // used them after `known` was taken.
                    const room::room_counts& kc = known->counts();
                    ep.known.clear();
                    ep.own_known.clear();
                    for (const auto& [w, n] : kc.admitted_windows) {
                        ep.known[w] += n;
                    }
                    if (kc.admitted_windows.empty() && kc.admitted_last_minute > 0) {
                        ep.known[room::floor_to(
                            kc.as_of_ms, std::max<std::int64_t>(1, r.limits.rate_window_ms))] +=
                            kc.admitted_last_minute;
                    }
                    if (auto it = reported_.find(r.room); it != reported_.end()) {
                        for (const auto& [w, n] : it->second.admitted.entries()) {
                            if (n > 0 && room::rate_window_live(w, r.limits, kc.as_of_ms)) {
                                ep.own_known[w] += n;
                            }
                        }
                    }
                    ep.leased = kc.held;
                }
            }
            if (fresh) {
                ep.entry_window =
                    room::floor_to(now_ms, std::max<std::int64_t>(1, r.limits.rate_window_ms));
            }
            // The node's own admissions from before the episode, read again from every report:
            // a worker may hand over some made from the lease only after the episode began.
            // They fell before the lease lapsed, so by the sub-window the episode began in
            // (that one counted whole: it may hold allowance admissions too, counted twice).
            ep.pre.clear();
            for (const auto& [w, n] : r.live.admitted.entries()) {
                if (n > 0 && w <= ep.entry_window) {
                    ep.pre[w] += n;
                }
            }
            refill(r.room, ep, r.limits, now_ms);
        }
    }
    if (entered) {
        notify(true, now_ms);
    }
}

void sync_task::refill(const std::string& room_id, episode& ep, const room::room_limits& limits,
                       std::int64_t now_ms) {
    room::slot_pool& pool = node_.pool(room_id);
    // Usable until the next refill is due; a node whose sync stopped altogether runs dry.
    pool.extend_until(now_ms + opt_.lease_ttl_ms);
    // The store is down: a dry pool queues the visitor instead of asking it for a top-up.
    pool.suspend_top_ups_until(now_ms + opt_.interval_ms);
    // Slots that left the pool since the last refill were admissions made before it, and this
    // sync began after that refill's answer (no sync runs while one is in flight): dated now
    // they stay in the minute at least as long as they really do. Those that left since are
    // counted whole until the next refill dates them.
    const std::int64_t rate_window = std::max<std::int64_t>(1, limits.rate_window_ms);
    if (ep.pending > 0) {
        ep.own[room::floor_to(now_ms, rate_window)] += ep.pending;
    }
    std::int64_t in_pool = pool.available();  // read once: see pool_after below
    ep.pending = std::max<std::int64_t>(0, ep.pool_after - in_pool);
    if (ep.share <= 0 || !limits.needs_slots) {
        ep.pool_after = in_pool;
        return;
    }
    // The limits in force now: a reload that lowers total_active_users during the outage (an
    // origin struggling) lowers the episode's budget at once, and the slots of the pool beyond
    // it go back (admissions made stay made).
    const auto allowed = std::max<std::int64_t>(
        0,
        static_cast<std::int64_t>(ep.share * static_cast<double>(std::max<std::int64_t>(
                                                 0, limits.total_active_users - ep.known_active))) -
            ep.own_before);
    if (ep.granted > allowed) {
        const std::int64_t back = pool.take_up_to(std::min(in_pool, ep.granted - allowed));
        in_pool -= back;
        ep.granted -= back;
    }
    ep.budget = std::min(ep.budget, std::max<std::int64_t>(0, allowed - ep.granted));
    std::int64_t own = 0;
    std::int64_t allowance = ep.pending;  // allowance admissions still in the minute
    // The other nodes' part of the last known minute still in it now: the room's known
    // admissions still in it, less this node's own (summed over the nodes, these are ≥ 0).
    double others = ep.share * static_cast<double>(ep.leased);
    for (auto* m : {&ep.known, &ep.own_known}) {
        const double sign = m == &ep.known ? ep.share : -1.0;
        for (auto it = m->begin(); it != m->end();) {
            if (room::rate_window_live(it->first, limits, now_ms)) {
                others += sign * static_cast<double>(it->second);
                ++it;
            } else {
                it = m->erase(it);
            }
        }
    }
    for (auto* m : {&ep.pre, &ep.own}) {
        for (auto it = m->begin(); it != m->end();) {
            if (room::rate_window_live(it->first, limits, now_ms)) {
                own += it->second;
                allowance += m == &ep.own ? it->second : 0;
                ++it;
            } else {
                it = m->erase(it);
            }
        }
    }
    own += ep.pending;
    // The slots in the pool count as admitted now: they may be taken at any moment. Summed over
    // the nodes of the last known state (shares summing to 1), the admissions in the minute are
    // their own admissions in it plus the pools, and the `others` terms sum to the slots leased
    // then plus the known minute's admissions still in it less the nodes' own parts of them
    // (never below 0: the known minute holds every node's reported part): so the room's minute
    // stays within new_users_per_minute, whenever each admission fell in it. That holds when the
    // nodes' last answers saw the same admissions; slots granted to one node after another's
    // last answer are in none of the other's terms (a known limit, see README).
    const double room_left = ep.share * static_cast<double>(limits.new_users_per_minute) - others -
                             static_cast<double>(own + in_pool);
    // And on its own, whatever the others did: its allowance admissions in the minute plus its
    // pool stay within share × new_users_per_minute, as the budget keeps the episode's within
    // share × the free active places. The store reserves exactly these bounds for a node that
    // has not reported since an outage (room_ledger::ghost_reserve) while another is back.
    const auto own_cap = static_cast<std::int64_t>(
        std::floor(ep.share * static_cast<double>(limits.new_users_per_minute)));
    // No pace beyond these: like a lease at a spike's start, what is free of the node's minute
    // goes into its pool at once. Pacing it (one interval's share per refill, at least a slot)
    // left most of a freed minute unused through a 30 s outage (idle 3.1 % on the worst seed of
    // outage-30s; 2.8 % without it), and the limits hold either way: they are bounds on the
    // minute, not on its spread.
    const std::int64_t add =
        std::min<std::int64_t>({static_cast<std::int64_t>(std::floor(std::max(0.0, room_left))),
                                own_cap - allowance - in_pool, ep.budget});
    if (add > 0) {
        pool.add(add);
        ep.budget -= add;
        ep.granted += add;
    }
    // Not read back: a slot taken by a worker meanwhile must show as consumed next time.
    ep.pool_after = in_pool + std::max<std::int64_t>(0, add);
}

void sync_task::notify(bool degraded, std::int64_t now_ms) {
    std::function<void(bool, std::int64_t)> f;
    {
        std::lock_guard lock(mu_);
        f = on_degraded_change_;
    }
    if (f) {
        f(degraded, now_ms);
    }
}

bool sync_task::end_episodes(const std::vector<room_report>& sent, const std::vector<adjust>& adj,
                             const std::vector<room_report>& failing) {
    std::lock_guard lock(mu_);
    // The store has the deltas, including the admissions made while degraded. Allowance
    // left in a pool is dropped: the store never leased it.
    for (std::size_t i = 0; i < sent.size(); ++i) {
        auto it = episodes_by_room_.find(sent[i].room);
        if (!adj[i].in_episode || it == episodes_by_room_.end()) {
            continue;
        }
        // The report took what was left out of the pool; nothing was added since.
        const std::int64_t leftover =
            adj[i].allowance_left +
            node_.pool(sent[i].room)
                .take_up_to(std::max<std::int64_t>(0, it->second.granted - adj[i].allowance_left));
        degraded_admissions_ +=
            static_cast<std::uint64_t>(std::max<std::int64_t>(0, it->second.granted - leftover));
        episodes_by_room_.erase(it);
    }
    // Rooms removed by a reload while degraded: their allowance simply goes. The others go on.
    std::erase_if(episodes_by_room_, [&](auto& e) {
        auto& [id, ep] = e;
        const auto named = [&](const room_report& r) { return r.room == id; };
        if (std::ranges::any_of(sent, named) || std::ranges::any_of(failing, named)) {
            return false;
        }
        std::int64_t leftover = node_.pool(id).take_up_to(ep.granted);
        degraded_admissions_ +=
            static_cast<std::uint64_t>(std::max<std::int64_t>(0, ep.granted - leftover));
        return true;
    });
    const bool left_degraded = degraded_since_ms_ != 0;
    degraded_since_ms_ = 0;
    consecutive_failures_ = 0;
    return left_degraded;
}

bool sync_task::degraded(std::int64_t now_ms) const {
    std::lock_guard lock(mu_);
    const bool hung = in_flight_ && now_ms - in_flight_since_ms_ > opt_.lease_ttl_ms;
    const bool store_stalls = consecutive_failures_ > 0 || hung;
    return store_stalls && now_ms - last_success_ms_ > opt_.lease_ttl_ms;
}

std::int64_t sync_task::degraded_since_ms() const {
    std::lock_guard lock(mu_);
    return degraded_since_ms_;
}

std::uint64_t sync_task::failed_syncs() const {
    std::lock_guard lock(mu_);
    return failed_syncs_;
}

std::uint64_t sync_task::consecutive_failures() const {
    std::lock_guard lock(mu_);
    return consecutive_failures_;
}

std::uint64_t sync_task::degraded_episodes() const {
    std::lock_guard lock(mu_);
    return episodes_;
}

std::uint64_t sync_task::degraded_admissions() const {
    std::lock_guard lock(mu_);
    std::uint64_t n = degraded_admissions_;
    for (const auto& [id, ep] : episodes_by_room_) {
        n += static_cast<std::uint64_t>(
            std::max<std::int64_t>(0, ep.granted - node_.pool(id).available()));
    }
    return n;
}

degraded_room_info sync_task::degraded_room(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    degraded_room_info info;
    auto it = episodes_by_room_.find(room_id);
    if (it == episodes_by_room_.end()) {
        return info;
    }
    info.active = it->second.share > 0;
    info.share = it->second.share;
    info.budget = it->second.budget;
    info.granted = it->second.granted;
    info.returned = it->second.lapsed;
    return info;
}

void sync_task::on_degraded_change(std::function<void(bool, std::int64_t)> f) {
    std::lock_guard lock(mu_);
    on_degraded_change_ = std::move(f);
}

}  // namespace waitroom::state
