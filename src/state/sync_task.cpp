// The sync itself: the options from config, the task's set-up, one sync (run_once builds the
// node's report, or repeats a batch whose outcome is unknown), and its answer (on_synced
// publishes the snapshot and lease, or keeps the batch for a resend, or puts its deltas back).
// Top-ups are in sync_top_up.cpp, degraded mode in sync_degraded.cpp.

#include "waitroom/state/sync_task.hpp"

#include <algorithm>
#include <random>

#include "refused_tickets.hpp"
#include "waitroom/state/error.hpp"

namespace waitroom::state {

namespace {

// The windows of `before` still live at `now_ms` with `d`'s added: the node's part of the room's
// counts after `d` is applied, which is what it re-reports to a store that lost its memory.
room::room_deltas live_windows(const room::room_deltas* before, const room::room_deltas& d,
                               const room::room_limits& l, std::int64_t now_ms) {
    room::room_deltas out;
    if (before != nullptr) {
        for (const auto& [w, n] : before->admitted.entries()) {
            if (n != 0 && room::rate_window_live(w, l, now_ms)) {
                out.admitted.add(w, n);
            }
        }
        for (const auto& [w, n] : before->active.entries()) {
            if (n != 0 && room::active_window_live(w, l, now_ms)) {
                out.active.add(w, n);
            }
        }
        for (const auto& [bw, n] : before->waiting.entries()) {
            if (n != 0 && room::waiting_window_live(bw.window, l, now_ms)) {
                out.waiting.add(bw, n);
            }
        }
    }
    out.admitted.merge(d.admitted);
    out.active.merge(d.active);
    out.waiting.merge(d.waiting);
    out.revoked = d.revoked;
    out.flagged = d.flagged;
    return out;
}

// `d` without its windows dead at `now_ms` (the store skips those): the new deltas of a room
// that waits for a report of unknown outcome go back to the node at every sync, and a room
// the store fails for hours must not pile up its dead windows there.
room::room_deltas live_only(room::room_deltas d, const room::room_limits& l, std::int64_t now_ms) {
    room::room_deltas out = live_windows(&d, room::room_deltas{}, l, now_ms);
    out.slots_used = d.slots_used;
    out.demand = d.demand;
    out.queued = d.queued;
    out.taken_behind = d.taken_behind;
    out.revoked = std::move(d.revoked);
    std::erase_if(d.checked_in,
                  [&](const auto& c) { return !room::waiting_window_live(c.window, l, now_ms); });
    out.checked_in = std::move(d.checked_in);
    out.left_queue = std::move(d.left_queue);
    out.flagged = std::move(d.flagged);
    return out;
}

// Runs the top-ups parked on a sync that ended. They are taken with the flight's end, under the
// same lock: a top-up parked on the next sync (which the caller of `done` may start at once)
// stays parked for that sync's answer.
void resume(std::vector<std::function<void()>>& parked) {
    for (auto& f : parked) {
        f();
    }
}

}  // namespace

sync_options make_sync_options(const config::config& cfg) {
    sync_options o;
    o.node_id = cfg.node.id.empty() ? std::string("node") : cfg.node.id;
    o.datacenter = cfg.node.datacenter;
    // Every *_ms here is compared with the product clock, which runs `testing.time_scale`
    // times faster than the real-time sync timer: a sync interval lasts that much product time.
    o.interval_ms = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(static_cast<double>(cfg.state.sync_interval.count()) *
                                     std::max(1.0, cfg.testing.time_scale)));
    o.node_ttl_ms = 3 * o.interval_ms;
    o.lease_ttl_ms = 2 * o.interval_ms;
    // After a store had nothing to give, it is asked again a quarter interval later at the
    // earliest (or at the next sync): asking the local store per request (it answers in
    // microseconds) tied its load to the request rate, ~1500 calls/min in a spike, and admitted
    // no more. A quarter interval bounds it at 4 per second and room, and uses capacity freed
    // between syncs sooner than waiting a whole interval (idle 3.3% → 3.0% in the simulator).
    o.top_up_retry_ms = std::max<std::int64_t>(1, o.interval_ms / 4);
    return o;
}

sync_task::sync_task(room::node_state& node, store& st, sync_options opt)
    : node_(node),
      store_(st),
      opt_(std::move(opt)),
      // A restarted node must not reuse the id its last report had (the store would take a new
      // report for a repeat): start anywhere in 2^52, far from any id used before.
      next_batch_((std::uint64_t{std::random_device{}()} << 20) + 1),
      next_top_up_((std::uint64_t{std::random_device{}()} << 20) + 1) {}

void sync_task::set_engine(std::shared_ptr<const room::engine> e) {
    follow_engine([e = std::move(e)] { return e; });
}

void sync_task::follow_engine(engine_source source) {
    std::lock_guard lock(mu_);
    engine_ = std::move(source);
}

void sync_task::set_overrides(std::shared_ptr<room::room_overrides> o) {
    std::lock_guard lock(mu_);
    overrides_ = std::move(o);
}

void sync_task::run_once(std::int64_t now_ms, std::function<void(std::error_code)> done) {
    std::shared_ptr<const room::engine> eng;
    std::map<std::string, std::int64_t> releases;
    // room → slots top-ups added since the last report
    std::map<std::string, std::int64_t> topped_up;
    std::map<std::string, std::int64_t> lapsed;   // rooms in a degraded episode → lapsed lease
    std::map<std::string, std::int64_t> granted;  // same rooms → allowance put in their pool
    std::map<std::string, unknown_room> resend;
    {
        std::unique_lock lock(mu_);
        eng = in_flight_ || !engine_ ? nullptr : engine_();
        if (!eng) {
            const std::error_code refused = in_flight_ ? errc::busy : errc::no_engine;
            lock.unlock();  // `done` may take it (a top-up waiting for the sync in flight does)
            if (done) {
                done(refused);
            }
            return;
        }
        in_flight_ = true;
        in_flight_since_ms_ = now_ms;
        if (overrides_) {
            overrides_seen_ = overrides_->writes();
        }
        resend.swap(unknown_);
        in_flight_batch_ = next_batch_++;
        releases.swap(pending_release_);
        topped_up.swap(topped_up_);
        for (const auto& [id, u] : resend) {
            // A room sent again builds no new report: what it would give back waits for one.
            if (auto it = releases.find(id); it != releases.end()) {
                pending_release_[id] = it->second;
            }
            if (auto it = topped_up.find(id); it != topped_up.end()) {
                topped_up_[id] = it->second;
            }
        }
        for (const auto& [id, ep] : episodes_by_room_) {
            lapsed[id] = ep.lapsed;
            granted[id] = ep.granted;
        }
    }

    room::delta_set deltas = node_.take_deltas();
    room::delta_set wait;  // the new deltas of rooms sent again: they wait in the node
    node_report report;
    report.node_id = opt_.node_id;
    report.datacenter = opt_.datacenter;
    report.now_ms = now_ms;
    report.node_ttl_ms = opt_.node_ttl_ms;
    std::map<std::string, room::room_limits> limits;
    std::vector<adjust> adj;
    for (const auto& r : eng->rooms()) {
        if (auto u = resend.find(r.id()); u != resend.end()) {
            // Of unknown outcome: it goes again as it was, under its batch, before any new one.
            if (auto it = deltas.find(r.id()); it != deltas.end()) {
                wait[r.id()] = live_only(std::move(it->second), u->second.limits, now_ms);
                deltas.erase(it);
            }
            limits[r.id()] = u->second.limits;
            report.rooms.push_back(std::move(u->second.sent));
            adj.push_back(u->second.adj);
            resend.erase(u);
            continue;
        }
        room_report rr;
        rr.room = r.id();
        rr.limits = r.limits_at(now_ms);
        if (auto it = deltas.find(r.id()); it != deltas.end()) {
            rr.deltas = std::move(it->second);
            deltas.erase(it);
        }
        room::slot_pool& pool = node_.pool(r.id());
        adjust a;
        if (auto it = lapsed.find(r.id()); it != lapsed.end()) {
            // Degraded: the pool holds only allowance, which the store never leased, so none
            // of it goes back; the lease that lapsed does. The allowance ends with this report:
            // what is left of it comes out of the pool now (back in if the sync fails), so
            // every allowance admission is in this report's deltas or in `held` below.
            a.in_episode = true;
            rr.slots_returned = it->second;
            a.allowance_left = pool.take_up_to(granted[r.id()]);
        } else {
            // An expired lease is given back whole: the store may have forgotten it already,
            // and if not, this keeps its count of held slots right. Otherwise the node gives
            // back what the store asked at the last sync, and at least every slot that sat in
            // the pool unused since the last report (those top-ups added since are the ones
            // that did not): the store takes back a lease not used for an interval
            // (room_ledger::sync), and handed back here it is unheld for other nodes' top-ups
            // at once, where a release in the answer would come back one interval later.
            std::int64_t give_back =
                rr.limits.needs_slots && !pool.expired(now_ms)
                    ? std::max(releases[r.id()], pool.available() - topped_up[r.id()])
                    : pool.available();
            if (give_back > 0) {
                rr.slots_returned = pool.take_up_to(give_back);
            }
        }
        a.slots_used = rr.deltas.slots_used;
        {
            std::lock_guard lock(mu_);
            // A store that lost its memory lost this node's lease too: a re-report claims what
            // the pool holds of it (none while degraded: the pool holds only allowance), plus
            // the slots used and not reported yet (still in a worker, or taken since the deltas
            // were): the store counts them as held until their slots_used arrive. Leaving
            // degraded mode, the node holds none of the store's lease: whatever the store
            // granted it in answers lost in the outage is in no pool, and stops counting as held
            // (held_exact); its allowance admissions not in this report count as held instead,
            // so no grant meanwhile leaves them out.
            const std::int64_t unreported = std::max<std::int64_t>(
                0, pool.taken() - uses_reported_[r.id()] - rr.deltas.slots_used);
            rr.held = (a.in_episode ? 0 : pool.available()) + unreported;
            rr.held_exact = a.in_episode;
            if (auto it = epochs_.find(r.id()); it != epochs_.end()) {
                rr.epoch = it->second;
            }
            if (auto it = lost_top_ups_.find(r.id()); it != lost_top_ups_.end()) {
                rr.lost_top_up = it->second;
            }
            auto before = reported_.find(r.id());
            rr.live = live_windows(before == reported_.end() ? nullptr : &before->second, rr.deltas,
                                   rr.limits, now_ms);
            if (auto known = revoked_.find(r.id()); known != revoked_.end()) {
                for (const auto& [ticket, k] : known->second) {
                    if (!rr.deltas.revoking(ticket)) {
                        rr.live.revoked.push_back({ticket, k.window});
                    }
                }
            }
            if (auto known = flagged_.find(r.id()); known != flagged_.end()) {
                for (const auto& [ticket, k] : known->second) {
                    rr.live.flag(ticket);
                }
            }
        }
        limits[r.id()] = rr.limits;
        report.rooms.push_back(std::move(rr));
        adj.push_back(a);
    }
    // What is left of the deltas is the rooms a reload removed: dropped with the room (their
    // places given behind count as reported: no answer will ever hold them, and the room's pool
    // outlives it); a report of unknown outcome goes again all the same (the store may have
    // applied it: its answer settles it).
    for (const auto& [id, d] : deltas) {
        if (d.taken_behind > 0) {
            node_.pool(id).note_reported_behind(d.taken_behind);
        }
    }
    for (auto& [id, u] : resend) {
        limits[id] = u.limits;
        report.rooms.push_back(std::move(u.sent));
        adj.push_back(u.adj);
        adj.back().removed = true;
    }
    {
        std::lock_guard lock(mu_);
        held_back_.clear();
        for (const auto& [id, d] : wait) {
            held_back_[id] = d.admitted;
        }
    }
    if (!wait.empty()) {
        node_.submit(wait);
    }
    {
        std::lock_guard lock(mu_);
        report.batch = in_flight_batch_;
    }

    std::vector<room_report> sent = report.rooms;  // kept to undo on failure
    // The round trip the sync latency metric shows: from handing the report over to the answer
    // (both paths of on_synced end in `done`, once).
    done = [this, start = std::chrono::steady_clock::now(),
            then = std::move(done)](std::error_code ec) {
        std::function<void(std::chrono::nanoseconds, std::error_code)> f;
        {
            std::lock_guard lock(mu_);
            f = on_sync_complete_;
        }
        if (f) {
            f(std::chrono::steady_clock::now() - start, ec);
        }
        if (then) {
            then(ec);
        }
    };
    store_.sync(std::move(report),
                [this, now_ms, limits = std::move(limits), sent = std::move(sent),
                 adj = std::move(adj), done = std::move(done)](sync_result res) mutable {
                    on_synced(now_ms, std::move(limits), std::move(sent), std::move(adj),
                              std::move(res), std::move(done));
                });
}

void sync_task::on_synced(std::int64_t now_ms, std::map<std::string, room::room_limits> limits,
                          std::vector<room_report> sent, std::vector<adjust> adj, sync_result res,
                          std::function<void(std::error_code)> done) {
    // A store that failed every room (Redis out of memory refuses every script) is no store
    // for this node: the sync failed as a whole, and the node runs degraded mode, not each
    // room alone. Each room is of unknown outcome as below.
    if (!res.ec && res.rooms.size() == sent.size() && !sent.empty() &&
        std::ranges::all_of(res.rooms, [](const room_grant& g) { return bool(g.ec); })) {
        res.ec = res.rooms.front().ec;
    }
    if (res.ec || res.rooms.size() != sent.size()) {
        // Per room: keep the report for a resend under its batch, or put its deltas back. While
        // the lease holds; past it the failure path below starts degraded mode, which reckons
        // with every delta back in the node (merged, as before batch ids), but for a report
        // leaving degraded mode: the store may have applied it and only its answer was lost, and
        // merged into the next report its admissions of the outage would count twice. Resent as
        // it was, it also keeps the store reserving for the node (room_ledger.hpp) until an
        // answer ends the episode; the new deltas wait in the node meanwhile.
        // Only a store that was never reached surely applied nothing, and only for a report
        // sent for the first time. An answer that did not parse may follow rooms that ran:
        // putting their handed-back slots in the pool again would hold slots the store leases
        // to others, and admit past the limit across nodes.
        bool within_lease = false;
        {
            std::lock_guard lock(mu_);
            within_lease = now_ms - last_success_ms_ <= opt_.lease_ttl_ms;
        }
        std::vector<bool> keep(sent.size(), false);
        std::vector<room_report> for_episodes = sent;  // what the degraded episodes reckon with
        std::vector<room_report> alone;  // rooms in an episode of their own: refilled below
        {
            std::lock_guard lock(mu_);
            for (std::size_t i = 0; i < sent.size(); ++i) {
                room_report& r = sent[i];
                keep[i] = (within_lease || adj[i].in_episode) && !adj[i].removed &&
                          (r.batch != 0 || res.ec != errc::unavailable);
                if (keep[i]) {
                    // Outcome unknown: its returned slots stay returned and its deltas stay out
                    // of the node until the resend is answered (so does the allowance a report
                    // leaving degraded mode took out of the pool: the refills count it as used).
                    // The episodes see the admissions that wait in the node meanwhile too.
                    if (auto hb = held_back_.find(r.room); hb != held_back_.end()) {
                        for_episodes[i].deltas.admitted.merge(hb->second);
                        for_episodes[i].live.admitted.merge(hb->second);
                    }
                    if (episodes_by_room_.contains(r.room)) {
                        alone.push_back(for_episodes[i]);
                    }
                    continue;
                }
                // The store was not reached (or the lease ran out, and degraded mode below
                // reckons with everything): keep the deltas for the next sync and the slots we
                // meant to return. The lease lapses by itself (slot_pool::expired) and is handed
                // back whole at the next successful sync, so the store's count of held slots
                // stays right.
                if (adj[i].in_episode) {
                    node_.pool(r.room).add(adj[i].allowance_left);
                } else if (auto ep = episodes_by_room_.find(r.room);
                           ep != episodes_by_room_.end()) {
                    // In an episode of its own already (a resend built before it began): the
                    // pool holds allowance only, and these slots go back with the lapsed lease.
                    ep->second.lapsed += r.slots_returned;
                } else {
                    node_.pool(r.room).add(r.slots_returned);
                }
            }
        }
        on_failed(now_ms, for_episodes);
        if (within_lease && !alone.empty()) {
            on_failed(now_ms, alone, true);  // the node's lease holds, these rooms' did not
        }
        room::delta_set back;
        {
            std::lock_guard lock(mu_);
            for (std::size_t i = 0; i < sent.size(); ++i) {
                room_report& r = sent[i];
                if (!keep[i]) {
                    back[r.room] = std::move(r.deltas);
                    continue;
                }
                if (r.batch == 0) {
                    r.batch = in_flight_batch_;
                }
                const std::string id = r.room;
                unknown_[id] = unknown_room{std::move(r), adj[i], limits[id]};
            }
        }
        if (!back.empty()) {
            node_.submit(back);
        }
        std::vector<std::function<void()>> parked;
        {
            std::lock_guard lock(mu_);
            in_flight_ = false;
            parked.swap(after_flight_);
        }
        if (done) {
            done(res.ec ? res.ec : make_error_code(errc::protocol));
        }
        resume(parked);
        return;
    }

    // The store failed some rooms alone (room_grant::ec): each is of unknown outcome on its own
    // and goes again under its batch at every sync until the store applies it, past its lease
    // TTL on its own degraded allowance. The rooms the store applied are settled below.
    std::vector<room_report> failing;
    std::vector<std::error_code> failing_ec;
    std::vector<room_report> degrade;  // failing, past the lease TTL since last settled
    std::vector<std::pair<std::string, std::error_code>> newly_failing;
    {
        std::size_t k = 0;
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < sent.size(); ++i) {
            if (!res.rooms[i].ec) {
                if (k != i) {
                    sent[k] = std::move(sent[i]);
                    adj[k] = adj[i];
                    res.rooms[k] = std::move(res.rooms[i]);
                }
                ++k;
                continue;
            }
            if (adj[i].removed) {
                failing_.erase(sent[i].room);  // a room nobody runs any more: its counts go too
                node_.pool(sent[i].room).note_reported_behind(sent[i].deltas.taken_behind);
                continue;
            }
            room_report& r = sent[i];
            if (r.batch == 0) {
                r.batch = in_flight_batch_;
            }
            ++room_failures_[r.room];
            failing_ec.push_back(res.rooms[i].ec);
            auto settled = settled_ms_.find(r.room);
            if (now_ms - (settled == settled_ms_.end() ? 0 : settled->second) > opt_.lease_ttl_ms) {
                degrade.push_back(r);
                if (auto hb = held_back_.find(r.room); hb != held_back_.end()) {
                    degrade.back().deltas.admitted.merge(hb->second);
                    degrade.back().live.admitted.merge(hb->second);
                }
            }
            failing.push_back(r);
            const std::string id = r.room;
            unknown_[id] = unknown_room{std::move(r), adj[i], limits[id]};
        }
        sent.resize(k);
        adj.resize(k);
        res.rooms.resize(k);
    }
    if (!degrade.empty()) {
        on_failed(now_ms, degrade, true);
    }

    auto snap = std::make_shared<room::state_snapshot>();
    snap->as_of_ms = now_ms;
    const std::shared_ptr<const room::state_snapshot> previous = node_.snapshot();
    std::map<std::string, std::int64_t> releases;
    std::map<std::string, std::int64_t> demand;
    const bool left_degraded = end_episodes(sent, adj, failing);
    std::vector<std::string> recovered;  // rooms the store had failed alone, settled again
    std::vector<bool> in_episode(sent.size(), false);  // still: a resend settled, see end_episodes
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < sent.size(); ++i) {
            if (res.rooms[i].abandoned > 0) {
                abandoned_by_room_[sent[i].room] +=
                    static_cast<std::uint64_t>(res.rooms[i].abandoned);
            }
        }
        for (std::size_t i = 0; i < sent.size(); ++i) {
            in_episode[i] = episodes_by_room_.contains(sent[i].room);
            settled_ms_[sent[i].room] = now_ms;
            if (failing_.erase(sent[i].room) != 0) {
                recovered.push_back(sent[i].room);
            }
        }
        for (std::size_t i = 0; i < failing.size(); ++i) {
            if (failing_.insert(failing[i].room).second) {
                newly_failing.emplace_back(failing[i].room, failing_ec[i]);
            }
        }
        for (const auto& r : sent) {
            // The store took back what it granted the lost top-up, if anything.
            if (auto it = lost_top_ups_.find(r.room);
                r.lost_top_up != 0 && it != lost_top_ups_.end() && it->second == r.lost_top_up) {
                lost_top_ups_.erase(it);
            }
        }
    }
    {
        // The revoked sessions this node knows now: the store's list, its own just reported,
        // and those it knew before while they last (a store refilling after it lost its memory
        // lists only what the nodes re-reported so far). The snapshot refuses all of them.
        std::lock_guard lock(mu_);
        std::map<std::string, std::map<std::uint64_t, known_revocation>> revoked;
        std::map<std::string, std::map<std::uint64_t, known_flag>> known_flags;
        for (std::size_t i = 0; i < sent.size(); ++i) {
            const room::room_limits& l = limits[sent[i].room];
            auto& known = revoked[sent[i].room];
            if (auto it = revoked_.find(sent[i].room); it != revoked_.end()) {
                known = std::move(it->second);
            }
            std::erase_if(known, [&](const auto& e) {
                return !room::revocation_live(e.second.since, l, now_ms);
            });
            const std::int64_t since = room::floor_to(now_ms, l.window_ms);
            auto add = [&](std::uint64_t ticket, std::int64_t window) {
                auto it = known.find(ticket);
                if (it == known.end()) {
                    known.emplace(ticket, known_revocation{window, since});
                } else if (it->second.window < 0) {
                    it->second.window = window;
                }
            };
            for (const auto& rev : sent[i].deltas.revoked) {
                add(rev.ticket, rev.window);
            }
            auto& list = res.rooms[i].counts.revoked;
            for (std::uint64_t ticket : list) {
                add(ticket, -1);
            }
            // The flags: this node's own, refused on all of its workers from this answer on, and
            // the store's list (every node's), kept as the revoked sessions are.
            auto& flags = known_flags[sent[i].room];
            if (auto it = flagged_.find(sent[i].room); it != flagged_.end()) {
                flags = std::move(it->second);
            }
            std::erase_if(flags, [&](const auto& e) {
                return !room::revocation_live(e.second.since, l, now_ms);
            });
            auto& flagged = res.rooms[i].counts.flagged;
            for (std::uint64_t ticket : sent[i].deltas.flagged) {
                flags.emplace(ticket, known_flag{since});
            }
            for (std::uint64_t ticket : flagged) {
                flags.emplace(ticket, known_flag{since});
            }
            forget_oldest(flags, room::max_flagged_tickets);
            flagged.clear();
            for (const auto& e : flags) {
                flagged.push_back(e.first);  // ascending, as room_state::flagged wants
            }
            forget_oldest(known, room::max_revoked_sessions);
            list.clear();
            list.reserve(known.size());
            for (const auto& e : known) {
                list.push_back(e.first);  // ascending, as room_state::revoked wants
            }
        }
        for (const auto& r : failing) {  // what they knew stands until they are settled
            if (auto it = revoked_.find(r.room); it != revoked_.end()) {
                revoked[r.room] = std::move(it->second);
            }
            if (auto it = flagged_.find(r.room); it != flagged_.end()) {
                known_flags[r.room] = std::move(it->second);
            }
        }
        revoked_ = std::move(revoked);
        flagged_ = std::move(known_flags);
    }
    for (const auto& r : failing) {
        // The last state the store gave of it stays (degraded mode sizes its allowance by it).
        if (const room::room_state* before = previous->find(r.room)) {
            snap->rooms.emplace(r.room, *before);
        }
    }
    for (std::size_t i = 0; i < res.rooms.size(); ++i) {
        auto& g = res.rooms[i];
        room::slot_pool& pool = node_.pool(g.room);
        // A resend built before the room's own episode began, settled: the episode goes on
        // until the room's next report, which tells the store exactly what the node holds (none
        // of this grant: the pool holds the allowance only).
        if (!in_episode[i]) {
            pool.add(g.granted);
            pool.extend_until(now_ms + opt_.lease_ttl_ms);
            pool.suspend_top_ups_until(0);  // fresh state: a dry pool may ask again
            if (g.release > 0) {
                releases[g.room] = g.release;
            }
        }
        demand[g.room] = sent[i].deltas.demand;
        // The store's counts now hold these admissions: the snapshot's free capacity has them.
        pool.note_reported_behind(sent[i].deltas.taken_behind);
        room::room_state st(std::move(g.counts), limits[g.room]);
        if (const room::room_state* before = previous->find(g.room)) {
            st.follow(*before, limits[g.room].window_ms);  // the queue's departure rate
        }
        snap->rooms.emplace(g.room, std::move(st));
    }
    std::shared_ptr<room::room_overrides> overrides;
    std::uint64_t overrides_seen = 0;
    {
        std::lock_guard lock(mu_);
        overrides = overrides_;
        overrides_seen = overrides_seen_;
    }
    if (overrides) {
        // The store's switches win over this node's (a PATCH on another node, a restart): a
        // local PATCH went to the store first, so the store has it too. (A room the store
        // failed alone keeps its switches as they were.)
        for (const auto& g : res.rooms) {
            overrides->apply_synced(g.room, g.overrides.queue_all, g.overrides.suspended,
                                    overrides_seen);
        }
    }
    node_.publish(std::move(snap));
    std::vector<std::function<void()>> parked;
    {
        std::lock_guard lock(mu_);
        in_flight_ = false;
        parked.swap(after_flight_);
        last_success_ms_ = now_ms;
        ++syncs_;
        pending_release_ = std::move(releases);
        last_demand_ = std::move(demand);
        // The store now holds each room's live windows as the report had them (its deltas
        // applied, or the whole of them re-reported), under the epoch it answered.
        // Those of the rooms failed alone stand until they are settled.
        const auto gone = [&](const auto& e) {
            return std::ranges::none_of(failing,
                                        [&](const room_report& r) { return r.room == e.first; });
        };
        std::erase_if(epochs_, gone);
        std::erase_if(reported_, gone);
        for (std::size_t i = 0; i < sent.size(); ++i) {
            epochs_[sent[i].room] = std::move(res.rooms[i].epoch);
            reported_[sent[i].room] = std::move(sent[i].live);
            reported_[sent[i].room].revoked.clear();  // windows only: revocations are revoked_
            reported_[sent[i].room].flagged.clear();  // and flags flagged_
            uses_reported_[sent[i].room] += adj[i].slots_used;
        }
        top_up_asked_.clear();  // the lease now follows the demand: top-ups start small again
    }
    if (left_degraded) {
        notify(false, now_ms);
    }
    std::function<void(const std::string&, bool, std::error_code)> f;
    {
        std::lock_guard lock(mu_);
        f = on_room_failing_;
    }
    if (f) {
        for (const auto& [id, ec] : newly_failing) {
            f(id, true, ec);
        }
        for (const auto& id : recovered) {
            f(id, false, {});
        }
    }
    if (done) {
        done({});
    }
    resume(parked);
}

std::int64_t sync_task::last_success_ms() const {
    std::lock_guard lock(mu_);
    return last_success_ms_;
}

std::uint64_t sync_task::syncs() const {
    std::lock_guard lock(mu_);
    return syncs_;
}

std::uint64_t sync_task::abandoned(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    auto it = abandoned_by_room_.find(room_id);
    return it == abandoned_by_room_.end() ? 0 : it->second;
}

std::uint64_t sync_task::room_failures(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    auto it = room_failures_.find(room_id);
    return it == room_failures_.end() ? 0 : it->second;
}

bool sync_task::failing_alone(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    return failing_.contains(room_id);
}

void sync_task::on_room_failing(std::function<void(const std::string&, bool, std::error_code)> f) {
    std::lock_guard lock(mu_);
    on_room_failing_ = std::move(f);
}

void sync_task::on_sync_complete(std::function<void(std::chrono::nanoseconds, std::error_code)> f) {
    std::lock_guard lock(mu_);
    on_sync_complete_ = std::move(f);
}

}  // namespace waitroom::state
