#include "waitroom/state/room_ledger.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "refused_tickets.hpp"

namespace waitroom::state {

using room::room_limits;

room_ledger::node_entry& room_ledger::touch(const std::string& node_id,
                                            const std::string& datacenter, std::int64_t now_ms) {
    auto& n = nodes_[node_id];
    n.datacenter = datacenter;
    n.last_seen = std::max(n.last_seen, now_ms);
    return n;
}

void room_ledger::expire_nodes(std::int64_t now_ms, std::int64_t node_ttl_ms) {
    // A silent node's lease expires with it; its node side drops the slots earlier
    // (sync_options::lease_ttl_ms < node_ttl_ms), so the two never both count them.
    for (auto it = nodes_.begin(); it != nodes_.end();) {
        if (it->second.last_seen + node_ttl_ms <= now_ms) {
            it = nodes_.erase(it);
        } else {
            ++it;
        }
    }
}

void room_ledger::apply(const room::room_deltas& deltas, const room_limits& l, std::int64_t now_ms,
                        bool full) {
    // Deltas for windows that stopped counting change nothing: skip them rather than resurrect.
    for (const auto& [w, d] : deltas.admitted.entries()) {
        if (room::rate_window_live(w, l, now_ms)) {
            admitted_[w] += d;
        }
    }
    for (const auto& [w, d] : deltas.active.entries()) {
        if (room::active_window_live(w, l, now_ms)) {
            active_[w] += d;
        }
    }
    // The queue counts tickets (queued_tickets): a re-report, whose tickets the node does not
    // keep, adds its live counts as they are, and they lapse with their windows.
    if (full) {
        for (const auto& [bw, d] : deltas.waiting.entries()) {
            queued_.add_count(bw, d, l, now_ms);
        }
    }
    for (const auto& c : deltas.checked_in) {
        queued_.check_in(c, l, now_ms);
    }
    for (std::uint64_t t : deltas.left_queue) {
        queued_.leave(t, l, now_ms);
    }
    queued_.bound(l, now_ms);
    apply_revocations(deltas, l, now_ms);
    apply_flags(deltas, l, now_ms);
}

void room_ledger::apply_flags(const room::room_deltas& deltas, const room_limits& l,
                              std::int64_t now_ms) {
    // As refused tickets are (apply_revocations), in a list of their own, bounded alike.
    std::erase_if(flagged_,
                  [&](const auto& e) { return !room::revocation_live(e.second.since, l, now_ms); });
    for (std::uint64_t t : deltas.flagged) {
        flagged_.emplace(t, flagged_ticket{room::floor_to(now_ms, l.window_ms)});
    }
    forget_oldest(flagged_, room::max_flagged_tickets);
}

void room_ledger::apply_revocations(const room::room_deltas& deltas, const room_limits& l,
                                    std::int64_t now_ms) {
    std::erase_if(revoked_,
                  [&](const auto& e) { return !room::revocation_live(e.second.since, l, now_ms); });
    // A ticket's place is freed once: by its first revocation that names a live window. Every
    // later one (a replay of the command, on this node or another, or the re-report of every
    // node after the store lost its memory) changes nothing. A revocation without a live window
    // (-1: a node that only knows of the ticket from the store's list) records the ticket; the
    // one of the node that revoked it may still free the place, in whichever order they come.
    // Remembered tickets come back in every answer, so every node refuses the session's cookies.
    std::size_t fresh = 0;  // deltas.revoked holds each ticket once (room_deltas::revoke)
    for (const auto& rev : deltas.revoked) {
        fresh += revoked_.contains(rev.ticket) ? 0 : 1;
    }
    const std::size_t cap = room::max_revoked_sessions;
    forget_oldest(revoked_, fresh < cap ? cap - fresh : 0);
    for (const auto& rev : deltas.revoked) {
        auto it = revoked_.find(rev.ticket);
        if (it == revoked_.end()) {
            if (revoked_.size() >= cap) {
                continue;  // one report alone brought more than the bound
            }
            it = revoked_.emplace(rev.ticket, revoked_session{room::floor_to(now_ms, l.window_ms)})
                     .first;
        }
        if (!it->second.freed && rev.window >= 0 &&
            room::active_window_live(rev.window, l, now_ms)) {
            active_[rev.window] -= 1;
            it->second.freed = true;
        }
    }
}

std::int64_t room_ledger::prune(const room_limits& l, std::int64_t now_ms) {
    std::erase_if(admitted_,
                  [&](const auto& e) { return !room::rate_window_live(e.first, l, now_ms); });
    std::erase_if(active_,
                  [&](const auto& e) { return !room::active_window_live(e.first, l, now_ms); });
    return queued_.prune(l, now_ms);
}

namespace {

// Each window counts for what it holds and never below zero, summed over all nodes. A window
// goes negative when more visitors leave it than were counted in it: legitimately for a moment
// (a node's −1 arrives before another node's +1), or because one cookie was replayed (N copies
// of an admitted cookie checking in from an old window each subtract 1 from it). Unfloored, those
// N − 1 extra subtractions would cancel visitors counted in other windows; floored, they can only
// empty the window the cookie names, and every copy is counted in the window it moved to. So the
// copies never lower the count below the visitors the room actually holds, and the store stays
// free of per-visitor memory. The raw sums are kept, so a late +1 still meets its −1.
std::int64_t floored_sum(const std::map<std::int64_t, std::int64_t>& windows,
                         bool (*live)(std::int64_t, const room_limits&, std::int64_t),
                         const room_limits& l, std::int64_t now_ms) {
    std::int64_t sum = 0;
    for (const auto& [w, n] : windows) {
        if (live(w, l, now_ms)) {
            sum += std::max<std::int64_t>(0, n);
        }
    }
    return sum;
}

}  // namespace

room::room_counts room_ledger::counts(const room_limits& l, std::int64_t now_ms) const {
    room::room_counts c;
    c.as_of_ms = now_ms;
    c.admitted_last_minute = floored_sum(admitted_, room::rate_window_live, l, now_ms);
    for (const auto& [w, n] : admitted_) {
        if (n > 0 && room::rate_window_live(w, l, now_ms)) {
            c.admitted_windows.emplace_back(w, n);
        }
    }
    // The places held, and by run of windows (room::active_run_ms: the window itself but for
    // sessions of over 40 minutes), ascending: the map is. Each window floored at zero, as
    // floored_sum.
    const std::int64_t run = room::active_run_ms(l);
    for (const auto& [w, n] : active_) {
        if (n > 0 && room::active_window_live(w, l, now_ms)) {
            c.active += n;
            const std::int64_t start = room::floor_to(w, run);
            if (!c.active_windows.empty() && c.active_windows.back().first == start) {
                c.active_windows.back().second += n;
            } else {
                c.active_windows.emplace_back(start, n);
            }
        }
    }
    c.waiting = queued_.by_bucket(l, now_ms);
    for (const auto& [ticket, r] : revoked_) {
        if (room::revocation_live(r.since, l, now_ms)) {
            c.revoked.push_back(ticket);
        }
    }
    for (const auto& [ticket, f] : flagged_) {
        if (room::revocation_live(f.since, l, now_ms)) {
            c.flagged.push_back(ticket);
        }
    }
    c.held = held_total();
    for (const auto& [id, n] : nodes_) {
        auto it = std::find_if(c.datacenters.begin(), c.datacenters.end(),
                               [&](const auto& dc) { return dc.datacenter == n.datacenter; });
        if (it == c.datacenters.end()) {
            c.datacenters.push_back({n.datacenter, 1});
        } else {
            ++it->nodes;
        }
    }
    return c;
}

std::int64_t room_ledger::capacity(const room_limits& l, std::int64_t now_ms) const {
    const std::int64_t active = floored_sum(active_, room::active_window_live, l, now_ms);
    const std::int64_t admitted = floored_sum(admitted_, room::rate_window_live, l, now_ms);
    return std::max<std::int64_t>(
        0, std::min(l.total_active_users - active, l.new_users_per_minute - admitted));
}

double room_ledger::demand_total() const {
    double total = 0;
    for (const auto& [id, n] : nodes_) {
        total += n.demand;
    }
    return total;
}

double room_ledger::share_of(const node_entry& me) const {
    const double total_demand = demand_total();
    return total_demand > 0 ? me.demand / total_demand : 1.0 / static_cast<double>(nodes_.size());
}

bool room_ledger::near_limit(std::int64_t cap) const {
    return nodes_.size() > 1 &&
           static_cast<double>(cap) <= 2 * demand_total() + 2 * static_cast<double>(nodes_.size());
}

std::int64_t room_ledger::held_total() const {
    std::int64_t h = 0;
    for (const auto& [id, n] : nodes_) {
        h += n.held;
    }
    return h;
}

std::int64_t room_ledger::held_by(const std::string& node_id) const {
    auto it = nodes_.find(node_id);
    return it == nodes_.end() ? 0 : it->second.held;
}

std::int64_t room_ledger::seen_ttl(const room_limits& l, std::int64_t node_ttl_ms) {
    // room.lua's set_ttls: how long the room's keys live without syncs.
    return std::max({l.session_ms + l.window_ms, l.window_ms + l.abandon_after_ms,
                     l.rate_span_ms + l.rate_window_ms, node_ttl_ms,
                     2 * l.window_ms + std::max({l.session_ms, l.rejoin_ms, l.abandon_after_ms})}) +
           60'000;
}

std::pair<std::int64_t, std::int64_t> room_ledger::allowance_bound(const room_limits& l,
                                                                   const seen_entry& s) {
    // Its allowance (sync_degraded.cpp): within any sliding minute at most 1 / peers of
    // new_users_per_minute, and over its episode at most 1 / peers of the active places free in
    // its last answer. Its last answer may be that of any of its recent syncs (answers).
    std::int64_t by_rate = l.new_users_per_minute / std::max<std::int64_t>(1, s.peers);
    std::int64_t by_active = s.free_active / std::max<std::int64_t>(1, s.peers);
    for (const auto& a : s.answers) {
        const std::int64_t peers = std::max<std::int64_t>(1, a[1]);
        by_rate = std::max(by_rate, l.new_users_per_minute / peers);
        by_active = std::max(by_active, a[2] / peers);
    }
    return {by_rate, by_active};
}

bool room_ledger::ghosts_open(std::int64_t now_ms, std::int64_t node_ttl_ms) const {
    // The window's end is one node TTL after the last report that opened it, on that node's
    // clock. One further ahead of this clock than another node TTL comes from a clock that is
    // wrong (or was written by hand): honoured, it would hold every grant back, every node a
    // ghost to the others, for as long as the clock is ahead.
    return now_ms < ghosts_until_ && ghosts_until_ <= now_ms + 2 * node_ttl_ms;
}

void room_ledger::charge_restarted(const room_limits& l, const seen_entry& old,
                                   std::int64_t prev_seen, bool forgotten, bool leaving_report,
                                   std::int64_t now_ms) {
    // A ghost, or one this report makes one (it leaves degraded mode: prev_seen falls in the
    // window it opens or widens), or a node marked leaving (see ghost_reserve).
    const bool ghost = leaving_report || (ghosts_open(now_ms, node_ttl_ms_) &&
                                          prev_seen > ghosts_from_ && prev_seen < ghosts_to_);
    const bool leaving =
        old.leaving && now_ms < prev_seen + node_ttl_ms_ && prev_seen <= now_ms + node_ttl_ms_;
    if (!ghost && !leaving) {
        return;
    }
    std::pair<std::int64_t, std::int64_t> bound{0, 0};
    if (ghost) {
        bound = allowance_bound(l, old);
        const std::int64_t lease = forgotten ? old.held : 0;
        bound = {bound.first + lease, bound.second + lease};
    }
    if (leaving) {
        bound = {std::max(bound.first, old.leaving->first),
                 std::max(bound.second, old.leaving->second)};
    }
    if (bound.first > 0) {
        admitted_[room::floor_to(now_ms, std::max<std::int64_t>(1, l.rate_window_ms))] +=
            bound.first;
    }
    if (bound.second > 0) {
        active_[room::floor_to(now_ms, room::active_window_ms(l))] += bound.second;
    }
}

std::pair<std::int64_t, std::int64_t> room_ledger::ghost_reserve(const room_limits& l,
                                                                 std::int64_t now_ms,
                                                                 const std::string& asking) const {
    std::int64_t rate = 0;
    std::int64_t active = 0;
    for (const auto& [id, s] : seen_) {
        const bool ghost = ghosts_open(now_ms, node_ttl_ms_) && s.last_seen > ghosts_from_ &&
                           s.last_seen < ghosts_to_;
        // (A last_seen further ahead of this clock than a node TTL is no clock of a live node.)
        const bool leaving = s.leaving && id != asking && now_ms < s.last_seen + node_ttl_ms_ &&
                             s.last_seen <= now_ms + node_ttl_ms_;
        if (!ghost && !leaving) {
            continue;
        }
        std::pair<std::int64_t, std::int64_t> bound{0, 0};
        if (ghost) {
            bound = allowance_bound(l, s);
        }
        if (leaving) {
            bound = {std::max(bound.first, s.leaving->first),
                     std::max(bound.second, s.leaving->second)};
        }
        // A node still live has its lease counted as held already; a ghost forgotten since may
        // have used its lease unreported too.
        const std::int64_t lease = ghost && !nodes_.contains(id) ? s.held : 0;
        rate += lease + bound.first;
        active += lease + bound.second;
    }
    return {rate, active};
}

std::int64_t room_ledger::free_unheld(const room_limits& l, std::int64_t now_ms,
                                      const std::string& asking, std::int64_t unseen_active) const {
    const std::int64_t active =
        floored_sum(active_, room::active_window_live, l, now_ms) + unseen_active;
    const std::int64_t admitted = floored_sum(admitted_, room::rate_window_live, l, now_ms);
    const auto [rate_reserve, active_reserve] = ghost_reserve(l, now_ms, asking);
    const std::int64_t cap =
        std::max<std::int64_t>(0, std::min(l.total_active_users - active - active_reserve,
                                           l.new_users_per_minute - admitted - rate_reserve));
    return std::max<std::int64_t>(0, cap - held_total());
}

room_grant room_ledger::sync(const std::string& node_id, const std::string& datacenter,
                             const room_report& report, std::int64_t now_ms,
                             std::int64_t node_ttl_ms, std::uint64_t batch) {
    const room_limits& l = report.limits;
    node_ttl_ms_ = node_ttl_ms;
    if (epoch_.empty()) {
        epoch_ = std::to_string(now_ms) + "/" + node_id;
        epoch_at_ = now_ms;
    }
    expire_nodes(now_ms, node_ttl_ms);
    std::erase_if(seen_, [&](const auto& e) {
        return e.second.last_seen + seen_ttl(l, node_ttl_ms) <= now_ms;
    });
    room_grant g;
    g.room = report.room;
    g.epoch = epoch_;
    auto known = nodes_.find(node_id);
    const bool forgotten = known == nodes_.end();
    // Already applied (its answer was lost): counting it again would count its visitors twice.
    // A node forgotten since (silent past its TTL) has its resend applied as new.
    const bool applied_before = batch != 0 && known != nodes_.end() && batch == known->second.batch;
    // Deltas from a node that knew another epoch add to counts this ledger never had: the node
    // must re-report all of its live windows instead.
    if (!applied_before && !report.full && !report.epoch.empty() && report.epoch != epoch_) {
        // This ledger is not the one the node knew: until every live node has re-reported (one
        // node TTL after the epoch began) its counts are short, and it grants nothing.
        if (refill_until_ == 0) {
            refill_until_ = epoch_at_ + node_ttl_ms;
        }
        g.stale = true;
        return g;
    }
    node_entry& me = touch(node_id, datacenter, now_ms);
    std::optional<std::int64_t> prev_seen;
    if (auto it = seen_.find(node_id); it != seen_.end()) {
        prev_seen = it->second.last_seen;
    }
    seen_[node_id].last_seen = now_ms;  // it reports now: no ghost of its own
    if (!applied_before) {
        me.batch = batch;
        if (prev_seen && report.epoch.empty() && !report.full) {
            charge_restarted(l, seen_[node_id], *prev_seen, forgotten, report.held_exact, now_ms);
        }
        apply(report.full ? report.live : report.deltas, l, now_ms, report.full);
    }
    g.abandoned = prune(l, now_ms);
    if (!applied_before && report.held_exact && !report.full) {
        // The node leaves degraded mode: the store was away. Every node live when this one last
        // synced (seen after its last sync − node TTL) and silent since the first node came back
        // may have admitted from its allowance what the counts miss; it is reserved for until it
        // syncs, or one node TTL after the last node back (a node silent that long is gone). A
        // node back after an outage that began later (it synced since the first came back)
        // opens the window to now.
        const std::int64_t from = prev_seen ? *prev_seen - node_ttl_ms : -1;  // -1: every node
        const bool open = ghosts_open(now_ms, node_ttl_ms);
        if (!open) {
            ghosts_from_ = from;
            ghosts_to_ = now_ms;
        } else {
            ghosts_from_ = std::min(ghosts_from_, from);
            if (!prev_seen || *prev_seen >= ghosts_to_) {
                ghosts_to_ = now_ms;
            }
        }
        // A window that is not open starts from now: an end left far ahead (a clock ahead, a
        // value written by hand) would otherwise keep it shut, and nobody reserved, for good.
        ghosts_until_ = open ? std::max(ghosts_until_, now_ms + node_ttl_ms) : now_ms + node_ttl_ms;
    }
    if (!applied_before) {
        // Leaving degraded mode (a re-report to a store that lost its memory, too): reserved
        // as a silent node was, by the answers it had, until a report shows that it got an
        // answer since (see room_ledger.hpp). A node the store has no record of may have had
        // any answer.
        seen_entry& se = seen_[node_id];
        if (report.held_exact) {
            const auto bound = prev_seen ? allowance_bound(l, se)
                                         : std::pair{l.new_users_per_minute, l.total_active_users};
            se.leaving = se.leaving ? std::pair{std::max(se.leaving->first, bound.first),
                                                std::max(se.leaving->second, bound.second)}
                                    : bound;
        } else {
            se.leaving.reset();
        }
    }
    if (!applied_before) {
        me.held = report.full || report.held_exact
                      ? std::max<std::int64_t>(0, report.held)
                      : std::max<std::int64_t>(
                            0, me.held - report.deltas.slots_used - report.slots_returned);
        // A top-up whose answer the node never got: its slots are in no pool (an exact count
        // already leaves them out).
        if (!report.full && report.lost_top_up != 0 && report.lost_top_up == me.top_up_id) {
            if (!report.held_exact) {
                me.held = std::max<std::int64_t>(0, me.held - me.top_up_granted);
            }
            me.top_up_id = 0;
            me.top_up_granted = 0;
        }
        // Demand decays by half each sync: the share follows the last couple of intervals.
        me.demand = me.demand / 2 + static_cast<double>(report.deltas.demand);
    } else {
        // The node never got this batch's answer, nor the slots it granted: they are in no pool.
        me.held = std::max<std::int64_t>(0, me.held - me.last_granted);
    }

    if (l.needs_slots) {
        // Capacity includes the slots already leased: the lease target is this node's share of
        // it, and a grant never exceeds what no node holds yet. The target is also capped at the
        // node's decayed demand (about two intervals of it) + 1: leasing out all free capacity
        // would leave nothing for the top-ups of a node whose traffic just rose, and it would
        // queue visitors while the room still had room.
        const std::int64_t cap = capacity(l, now_ms);
        const std::int64_t free_unheld =
            now_ms < refill_until_ ? 0 : this->free_unheld(l, now_ms, node_id);
        const double share = share_of(me);
        // With other nodes live, a lease takes half of the node's share: the other half stays
        // unheld for top-ups, which go to whichever node runs dry first. Leasing whole shares
        // stranded the last slots of a spike in the pool of the node that synced last while a
        // small node queued (queueing began at 88.5% of the limit in the simulator).
        // Alone (share 1), a node may lease all of the capacity. With others live, the half
        // share is rounded down: rounding up gave every idle node a slot, so a room of 2 with
        // three nodes had both slots parked in two idle pools and queued the third node's first
        // visitor in an empty room. Rounded down, a small room leases nothing and every
        // admission is an exact top-up.
        const bool alone = nodes_.size() <= 1;
        const auto by_share =
            alone ? cap
                  : static_cast<std::int64_t>(std::floor(static_cast<double>(cap) * share / 2));
        // A node alone without recent demand (decayed below one request) leases nothing: every
        // node's first sync is alone in the store, and the slot it leased then sat in an idle
        // pool while another node queued a visitor in an empty small room. Alone for good, its
        // first visitor pays one top-up.
        // With others live, a node none of whose visitors asked for a slot since its last sync
        // leases nothing either: the store takes back a lease not used for an interval. Its
        // node hands back in this same report what sat unused in its pool (sync_task), so the
        // slots are unheld at once, for the top-up of whichever node runs dry, instead of
        // being released one interval later; its next visitor pays one top-up.
        const bool idle = alone ? me.demand < 1 : report.deltas.demand == 0;
        const auto by_demand = idle ? 0 : static_cast<std::int64_t>(std::ceil(me.demand / 2)) + 1;
        // Near the limit no node leases (see near_limit): the last free places go by exact
        // top-ups, to whichever node's visitors ask first.
        const std::int64_t target = near_limit(cap) ? 0 : std::min(by_share, by_demand);
        // With others live, one grant takes at most the node's share of what nobody holds
        // (rounded down), as a top-up does: the store's capacity still counts the slots other
        // nodes used since their last sync, and leases sized from it left a small node an
        // interval's worth of the last free places while the big node ran dry (queueing began
        // at 94-96.5 % of the limit on the worst seeds, before near_limit).
        const std::int64_t most =
            alone ? free_unheld
                  : static_cast<std::int64_t>(std::floor(static_cast<double>(free_unheld) * share));
        g.granted = std::clamp<std::int64_t>(target - me.held, 0, most);
        g.release = std::max<std::int64_t>(0, me.held - target);
        me.held += g.granted;
    } else {
        g.release = me.held;  // a room that admits nobody from slots gives them all back
    }
    me.last_granted = g.granted;
    g.counts = counts(l, now_ms);
    g.overrides = overrides_;
    seen_entry& se = seen_[node_id];
    se.last_seen = now_ms;
    se.held = me.held;
    se.peers = static_cast<std::int64_t>(nodes_.size());
    se.free_active = std::max<std::int64_t>(0, l.total_active_users - g.counts.active);
    std::erase_if(se.answers, [&](const auto& a) { return a[0] + 2 * node_ttl_ms < now_ms; });
    se.answers.push_back({now_ms, se.peers, se.free_active});
    return g;
}

std::int64_t room_ledger::top_up(const std::string& node_id, const std::string& datacenter,
                                 const room_limits& limits, std::int64_t want, std::int64_t now_ms,
                                 const std::string& epoch, std::uint64_t id, std::int64_t need,
                                 std::int64_t unreported) {
    expire_nodes(now_ms, node_ttl_ms_);
    node_entry& me = touch(node_id, datacenter, now_ms);
    // Remembered until the node's next sync, which may say that it never got this answer.
    me.top_up_id = id;
    me.top_up_granted = 0;
    if (!limits.needs_slots || want <= 0 || (!epoch.empty() && epoch != epoch_) ||
        now_ms < refill_until_) {
        return 0;
    }
    // The node's visitors who renewed out of windows the counts let go hold active places (not
    // the rate: a renewal is no new visitor).
    const std::int64_t free_unheld =
        this->free_unheld(limits, now_ms, node_id, std::max<std::int64_t>(0, unreported));
    // With other nodes live, one top-up takes at most half of what nobody holds, and at most
    // the node's share of it or an even split, whichever is more (at least one): the next node
    // to run dry finds some too, instead of one node taking an interval's worth of what is
    // left. (The even split is for a node whose traffic just rose: its share shows it only
    // from its next sync.)
    std::int64_t most = free_unheld;
    if (nodes_.size() > 1) {
        const double share = std::max(share_of(me), 1.0 / static_cast<double>(nodes_.size()));
        const auto by_share =
            static_cast<std::int64_t>(std::floor(static_cast<double>(free_unheld) * share));
        most = std::min((free_unheld + 1) / 2, std::max<std::int64_t>(1, by_share));
    }
    // Near the limit a top-up takes only what the visitors waiting for it need (a node that
    // does not say, need 0, gets what it asked): the rest of its ask would sit in its pool.
    if (need > 0 && near_limit(capacity(limits, now_ms))) {
        most = std::min(most, need);
    }
    const std::int64_t g = std::min(want, most);
    me.held += g;
    me.top_up_granted = g;
    if (auto it = seen_.find(node_id); it != seen_.end()) {
        it->second.held = me.held;
    }
    return g;
}

room_switch_values room_ledger::write_overrides(const override_write& w) {
    auto apply_one = [](std::optional<bool>& sw, switch_write how) {
        switch (how) {
            case switch_write::keep:
                break;
            case switch_write::unset:
                sw.reset();
                break;
            case switch_write::off:
                sw = false;
                break;
            case switch_write::on:
                sw = true;
                break;
        }
    };
    apply_one(overrides_.queue_all, w.queue_all);
    apply_one(overrides_.suspended, w.suspended);
    return overrides_;
}

}  // namespace waitroom::state
