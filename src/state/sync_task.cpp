#include "waitroom/state/sync_task.hpp"

#include <algorithm>
#include <cmath>
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
    return out;
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
      next_batch_((std::uint64_t{std::random_device{}()} << 20) + 1) {}

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
    std::map<std::string, std::int64_t> lapsed;   // rooms in a degraded episode → lapsed lease
    std::map<std::string, std::int64_t> granted;  // same rooms → allowance put in their pool
    std::optional<unknown_batch> resend;
    {
        std::lock_guard lock(mu_);
        if (in_flight_) {
            if (done) {
                done(errc::busy);
            }
            return;
        }
        eng = engine_ ? engine_() : nullptr;
        if (!eng) {
            if (done) {
                done(errc::no_engine);
            }
            return;
        }
        in_flight_ = true;
        if (overrides_) {
            overrides_seen_ = overrides_->writes();
        }
        resend.swap(unknown_);
        in_flight_resend_ = resend.has_value();
        in_flight_batch_ = resend ? resend->batch : next_batch_++;
        if (!resend) {
            releases.swap(pending_release_);
        }
        for (const auto& [id, ep] : episodes_by_room_) {
            lapsed[id] = ep.lapsed;
            granted[id] = ep.granted;
        }
    }

    // A resend builds nothing: it repeats its batch as it was, and the new deltas wait in the
    // node for the next batch.
    room::delta_set deltas = resend ? room::delta_set{} : node_.take_deltas();
    static const std::vector<room::compiled_room> no_rooms;
    node_report report;
    report.node_id = opt_.node_id;
    report.datacenter = opt_.datacenter;
    report.now_ms = now_ms;
    report.node_ttl_ms = opt_.node_ttl_ms;
    std::map<std::string, room::room_limits> limits;
    std::vector<adjust> adj;
    for (const auto& r : resend ? no_rooms : eng->rooms()) {
        room_report rr;
        rr.room = r.id();
        rr.limits = r.limits_at(now_ms);
        if (auto it = deltas.find(r.id()); it != deltas.end()) {
            rr.deltas = std::move(it->second);
        }
        room::slot_pool& pool = node_.pool(r.id());
        adjust a;
        if (auto it = lapsed.find(r.id()); it != lapsed.end()) {
            // Degraded: the pool holds only allowance, which the store never leased, so none
            // of it goes back; the lease that lapsed does. The slots_used of allowance
            // admissions must not lower the store's count of this node's held slots.
            a.in_episode = true;
            rr.slots_returned = it->second;
            std::int64_t consumed = std::max<std::int64_t>(0, granted[r.id()] - pool.available());
            a.cancelled_episode = std::min(consumed, rr.deltas.slots_used);
            rr.deltas.slots_used -= a.cancelled_episode;
        } else {
            // An expired lease is given back whole: the store may have forgotten it already,
            // and if not, this keeps its count of held slots right.
            std::int64_t give_back = rr.limits.needs_slots && !pool.expired(now_ms)
                                         ? releases[r.id()]
                                         : pool.available();
            if (give_back > 0) {
                rr.slots_returned = pool.take_up_to(give_back);
            }
        }
        // A store that lost its memory lost this node's lease too: a re-report claims what the
        // pool holds of it (none while degraded: the pool holds only allowance).
        rr.held = a.in_episode ? 0 : pool.available();
        {
            std::lock_guard lock(mu_);
            if (auto it = epochs_.find(r.id()); it != epochs_.end()) {
                rr.epoch = it->second;
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
            if (auto it = cancel_used_.find(r.id()); it != cancel_used_.end()) {
                a.cancelled_pending = std::min(it->second, rr.deltas.slots_used);
                rr.deltas.slots_used -= a.cancelled_pending;
                it->second -= a.cancelled_pending;
            }
        }
        limits[r.id()] = rr.limits;
        report.rooms.push_back(std::move(rr));
        adj.push_back(a);
    }
    // Deltas of rooms removed by a reload are dropped with the room.
    if (resend) {
        report.rooms = std::move(resend->sent);
        limits = std::move(resend->limits);
        adj = std::move(resend->adj);
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
    if (res.ec || res.rooms.size() != sent.size()) {
        bool keep_whole = false;
        {
            std::lock_guard lock(mu_);
            // Only while the lease holds: past it the failure path below starts degraded mode,
            // which reckons with every delta back in the node (merged, as before batch ids).
            keep_whole = (in_flight_resend_ || res.ec == errc::timeout) &&
                         now_ms - last_success_ms_ <= opt_.lease_ttl_ms;
        }
        if (keep_whole) {
            // Outcome unknown: its returned slots stay returned and its deltas stay out of the
            // node until the resend is answered.
            on_failed(now_ms, sent);
            {
                std::lock_guard lock(mu_);
                unknown_ = unknown_batch{in_flight_batch_, std::move(sent), std::move(adj),
                                         std::move(limits)};
                in_flight_ = false;
            }
            if (done) {
                done(res.ec ? res.ec : make_error_code(errc::protocol));
            }
            return;
        }
        // The store did not apply anything: keep the deltas for the next sync and the slots we
        // meant to return. The lease lapses by itself (slot_pool::expired) and is handed back
        // whole at the next successful sync, so the store's count of held slots stays right.
        room::delta_set back;
        {
            std::lock_guard lock(mu_);
            for (std::size_t i = 0; i < sent.size(); ++i) {
                auto& r = sent[i];
                if (!adj[i].in_episode) {
                    node_.pool(r.room).add(r.slots_returned);
                }
                r.deltas.slots_used += adj[i].cancelled_episode + adj[i].cancelled_pending;
                if (adj[i].cancelled_pending > 0) {
                    cancel_used_[r.room] += adj[i].cancelled_pending;
                }
            }
        }
        on_failed(now_ms, sent);
        for (auto& r : sent) {
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
    const std::shared_ptr<const room::state_snapshot> previous = node_.snapshot();
    std::map<std::string, std::int64_t> releases;
    std::map<std::string, std::int64_t> demand;
    std::map<std::string, std::int64_t> holdback;  // room → slots kept out of the new lease
    bool left_degraded = false;
    {
        std::lock_guard lock(mu_);
        // The store has the deltas, including the admissions made while degraded. Allowance
        // left in a pool is dropped: the store never leased it.
        for (std::size_t i = 0; i < sent.size(); ++i) {
            auto it = episodes_by_room_.find(sent[i].room);
            if (!adj[i].in_episode || it == episodes_by_room_.end()) {
                continue;
            }
            std::int64_t leftover = node_.pool(sent[i].room).take_up_to(it->second.granted);
            std::int64_t consumed = std::max<std::int64_t>(0, it->second.granted - leftover);
            degraded_admissions_ += static_cast<std::uint64_t>(consumed);
            // Allowance admissions the report did not cover are still in some worker: the
            // store does not know them yet. Like a leased slot used but not yet reported, they
            // must count as held until their deltas arrive, so they come out of the new lease.
            holdback[sent[i].room] = std::max<std::int64_t>(0, consumed - adj[i].cancelled_episode);
            episodes_by_room_.erase(it);
        }
        // Rooms removed by a reload while degraded: their allowance simply goes.
        for (auto& [id, ep] : episodes_by_room_) {
            std::int64_t leftover = node_.pool(id).take_up_to(ep.granted);
            degraded_admissions_ +=
                static_cast<std::uint64_t>(std::max<std::int64_t>(0, ep.granted - leftover));
        }
        episodes_by_room_.clear();
        left_degraded = degraded_since_ms_ != 0;
        degraded_since_ms_ = 0;
        consecutive_failures_ = 0;
    }
    {
        // The revoked sessions this node knows now: the store's list, its own just reported,
        // and those it knew before while they last (a store refilling after it lost its memory
        // lists only what the nodes re-reported so far). The snapshot refuses all of them.
        std::lock_guard lock(mu_);
        std::map<std::string, std::map<std::uint64_t, known_revocation>> revoked;
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
            forget_oldest(known, room::max_revoked_sessions);
            list.clear();
            list.reserve(known.size());
            for (const auto& e : known) {
                list.push_back(e.first);  // ascending, as room_state::revoked wants
            }
        }
        revoked_ = std::move(revoked);
    }
    for (std::size_t i = 0; i < res.rooms.size(); ++i) {
        auto& g = res.rooms[i];
        room::slot_pool& pool = node_.pool(g.room);
        pool.add(g.granted);
        if (auto it = holdback.find(g.room); it != holdback.end()) {
            std::int64_t covered = pool.take_up_to(it->second);
            if (covered < it->second) {
                // A lease too small to cover them: their slots_used must not lower the count
                // of slots the store believes held when they arrive.
                std::lock_guard lock(mu_);
                cancel_used_[g.room] += it->second - covered;
            }
        }
        pool.extend_until(now_ms + opt_.lease_ttl_ms);
        pool.suspend_top_ups_until(0);  // fresh state: a dry pool may ask again
        if (g.release > 0) {
            releases[g.room] = g.release;
        }
        demand[g.room] = sent[i].deltas.demand;
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
        // local PATCH went to the store first, so the store has it too.
        for (const auto& g : res.rooms) {
            overrides->apply_synced(g.room, g.overrides.queue_all, g.overrides.suspended,
                                    overrides_seen);
        }
    }
    node_.publish(std::move(snap));
    {
        std::lock_guard lock(mu_);
        in_flight_ = false;
        last_success_ms_ = now_ms;
        ++syncs_;
        pending_release_ = std::move(releases);
        last_demand_ = std::move(demand);
        // The store now holds each room's live windows as the report had them (its deltas
        // applied, or the whole of them re-reported), under the epoch it answered.
        epochs_.clear();
        reported_.clear();
        for (std::size_t i = 0; i < sent.size(); ++i) {
            epochs_[sent[i].room] = std::move(res.rooms[i].epoch);
            reported_[sent[i].room] = std::move(sent[i].live);
            reported_[sent[i].room].revoked.clear();  // windows only: revocations are revoked_
        }
        top_up_asked_.clear();  // the lease now follows the demand: top-ups start small again
    }
    if (left_degraded) {
        notify(false, now_ms);
    }
    if (done) {
        done({});
    }
}

void sync_task::on_failed(std::int64_t now_ms, const std::vector<room_report>& sent) {
    // The last state the store gave: only a successful sync publishes a snapshot.
    const auto last_known = node_.snapshot();
    bool entered = false;
    {
        std::lock_guard lock(mu_);
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
        for (const auto& r : sent) {
            room::slot_pool& pool = node_.pool(r.room);
            auto [it, fresh] = episodes_by_room_.try_emplace(r.room);
            episode& ep = it->second;
            if (fresh) {
                // The lease lapsed: keep it aside to hand back, and size the allowance from
                // the last state the store gave. Without one the node knows nothing of the
                // room (started while the store was down) and admits nobody new.
                ep.lapsed = pool.take_up_to(pool.available());
                ep.last_ms = now_ms - opt_.interval_ms;  // one interval's allowance at once
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
                    ep.budget = std::max<std::int64_t>(
                        0, static_cast<std::int64_t>(ep.share * static_cast<double>(free_active)) -
                               own_admitted);
                    // The admissions of the sliding minute still count against the rate: the
                    // allowance starts that far behind and catches up at the node's share.
                    ep.credit =
                        -ep.share * static_cast<double>(known->counts().admitted_last_minute) -
                        static_cast<double>(own_admitted);
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
    if (ep.share <= 0 || !limits.needs_slots) {
        ep.last_ms = now_ms;
        return;
    }
    const double span = static_cast<double>(std::max<std::int64_t>(1, limits.rate_span_ms));
    const double rate = ep.share * static_cast<double>(limits.new_users_per_minute) / span;
    const double depth = std::max(1.0, rate * static_cast<double>(opt_.interval_ms));
    const std::int64_t in_pool = pool.available();
    const double elapsed = static_cast<double>(std::max<std::int64_t>(0, now_ms - ep.last_ms));
    ep.last_ms = now_ms;
    // A token bucket one interval deep: an idle node does not save up a burst.
    ep.credit =
        std::min(ep.credit + rate * elapsed, std::max(0.0, depth - static_cast<double>(in_pool)));
    std::int64_t add = std::min<std::int64_t>(
        {static_cast<std::int64_t>(std::floor(std::max(0.0, ep.credit))),
         std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(depth)) - in_pool),
         ep.budget});
    if (add > 0) {
        pool.add(add);
        ep.credit -= static_cast<double>(add);
        ep.budget -= add;
        ep.granted += add;
    }
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

void sync_task::top_up(const std::string& room_id, std::int64_t now_ms,
                       std::function<void(bool)> done) {
    room::slot_pool& own = node_.pool(room_id);
    bool in_degraded_mode = false;
    {
        std::lock_guard lock(mu_);
        in_degraded_mode = degraded_since_ms_ != 0;
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
        // The lease itself lapsed (no sync for a while): renewing it is a whole sync, which
        // also settles the slots the store may have forgotten. When the renewed lease is still
        // empty (an idle node leases nothing), the top-up follows it.
        run_once(now_ms,
                 [this, &own, room_id, now_ms, done = std::move(done)](std::error_code ec) mutable {
                     if (!ec && !own.expired(now_ms) && own.available() == 0) {
                         return top_up(room_id, now_ms, std::move(done));
                     }
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
        // for twice the last one. At the start of a spike the last interval's demand is about
        // 1, and top-ups of 1 queued visitors while the store still had free slots.
        std::int64_t& asked = top_up_asked_[room_id];
        req.want =
            std::max({opt_.top_up_min, it == last_demand_.end() ? 0 : it->second, 2 * asked});
        asked = req.want;
        ++top_ups_;
        ++top_ups_by_room_[room_id];
    }
    req.node_id = opt_.node_id;
    req.datacenter = opt_.datacenter;
    req.room = room_id;
    req.now_ms = now_ms;
    ask_store(std::move(req));
}

void sync_task::ask_store(top_up_request req) {
    const std::string room_id = req.room;
    const std::int64_t now_ms = req.now_ms;
    top_up_request again = req;  // kept for a follow-up ask
    store_.top_up(std::move(req), [this, room_id, now_ms,
                                   again = std::move(again)](top_up_result res) mutable {
        room::slot_pool& pool = node_.pool(room_id);
        bool got = !res.ec && res.granted > 0;
        if (got) {
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
                again.want = std::max(2 * asked, short_by);
                asked = again.want;
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

std::uint64_t sync_task::top_ups(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    auto it = top_ups_by_room_.find(room_id);
    return it == top_ups_by_room_.end() ? 0 : it->second;
}

void sync_task::on_sync_complete(std::function<void(std::chrono::nanoseconds, std::error_code)> f) {
    std::lock_guard lock(mu_);
    on_sync_complete_ = std::move(f);
}

}  // namespace waitroom::state
