// The admission decision (DESIGN.md §4): a request routed to a room, then admitted, queued or
// rejected from its cookie and the room state; a session revoked; several cookies of one room
// ranked.
#include "waitroom/room/engine.hpp"
#include "admission_rules.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>

namespace waitroom::room {

using rules::ceil_div_ms;
using rules::count_request;
using rules::counted_waiting;
using rules::flood_reading;
using rules::given_refresh_ms;
using rules::keeps_queue_place;
using rules::make_limits;
using rules::session_alive;
using rules::trusted;

namespace {

// The longest a `random` room holds a free place for its draws (room_state keeps 15 s of
// snapshots to judge it by).
constexpr std::int64_t random_hold_most_ms = 15'000;

// A number in [0, 1) from two 64-bit values, uniform when either is (splitmix64's finalizer).
double unit_draw(std::uint64_t a, std::uint64_t b) {
    auto mix = [](std::uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    };
    const std::uint64_t h = mix(a ^ mix(b + 0x9e3779b97f4a7c15ull));
    return static_cast<double>(h >> 11) * 0x1.0p-53;
}

std::atomic<std::uint64_t> next_generation{1};

// Whether a request of a `random` room may try for a place. `queued`: its cookie while it holds a
// place in the queue (null: a new arrival, into a room nobody waits in, or `retry`); `counted`:
// that place was counted before; `retry`: a decision again after a top-up, whose first draw
// stands.
bool random_eligible(const room_state& st, std::int64_t refresh_ms, const payload* queued,
                     bool counted, bool retry) {
    const std::int64_t free = st.free_capacity();
    const std::int64_t waiting = st.waiting_total();
    if (waiting == 0 || retry) {
        return true;
    }
    if (queued != nullptr) {
        // A queued visitor's draw is a function of its ticket and its last check-in, both
        // sealed in its cookie and unseen by the client: copies of one due cookie, sent many
        // times at once or to several nodes, all draw alike, so replaying a cookie buys no extra
        // chances. Its next counted refresh draws anew.
        const double p = std::min(1.0, static_cast<double>(free) / static_cast<double>(waiting));
        if (unit_draw(queued->ticket, static_cast<std::uint64_t>(queued->last_check_in)) < p) {
            return true;
        }
    }
    // A free place nobody took for a whole refresh (up to the snapshots kept) while tickets are
    // counted waiting: the draws were diluted (tickets that stopped coming back, counted until
    // their windows lapse), and the next ticket holder due takes it. So a place is never left
    // idle longer than that while someone with a ticket waits.
    return counted && free > 0 &&
           st.free_unclaimed_for(std::numeric_limits<std::int64_t>::min(),
                                 std::min(refresh_ms, random_hold_most_ms));
}

}  // namespace

// ---- engine ----------------------------------------------------------------------------------

engine::engine(config::snapshot cfg, windowing win, std::shared_ptr<room_overrides> overrides,
               std::shared_ptr<const origin_gate> gate)
    : cfg_(std::move(cfg)),
      win_(win),
      late_renewal_ms_(std::llround(
          (2.0 * static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         cfg_->state.sync_interval)
                                         .count()) +
           1000.0) *
          std::max(1.0, cfg_->testing.time_scale))),
      overrides_(std::move(overrides)),
      gate_(std::move(gate)),
      generation_(next_generation.fetch_add(1, std::memory_order_relaxed)),
      router_(cfg_->rooms) {
    rooms_.resize(cfg_->rooms.size());
    for (std::size_t i = 0; i < rooms_.size(); ++i) {
        rooms_[i].index_ = i;
        rooms_[i].cfg_ = &cfg_->rooms[i];
        rooms_[i].bypass_ = bypass_matcher(cfg_->rooms[i].bypass);
        rooms_[i].win_ = win_;
        if (overrides_) {
            rooms_[i].switches_ = &overrides_->entry(cfg_->rooms[i].id);
        }
        rooms_[i].gate_ = gate_.get();
    }
}

const compiled_room* engine::find(std::string_view room_id) const {
    for (const auto& r : rooms_) {
        if (r.id() == room_id) {
            return &r;
        }
    }
    return nullptr;
}

route_result engine::route(const request_view& req) const {
    route_result out;
    auto idx = router_.match(req.host, req.path);
    if (!idx) {
        out.reason = pass_reason::unmatched;
        // Only a request that no room takes is looked at: a routed one costs nothing more.
        if (cfg_->origin.unknown_hosts == config::unknown_hosts_policy::reject &&
            router_.names_hosts() && !router_.knows_host(req.host)) {
            out.what = route_action::misdirected;
        }
        return out;
    }
    const compiled_room& r = rooms_[*idx];
    out.room = &r;
    if (r.bypass_.matches(req, req.path)) {
        out.reason = pass_reason::bypassed;
        return out;
    }
    out.what = route_action::decide;
    out.reason = pass_reason::none;
    return out;
}

decision engine::decide(const request_view& req, worker_state& ws, const payload* valid_cookie,
                        std::int64_t now_ms, rng& random, attempt at) const {
    route_result rr = route(req);
    if (rr.what != route_action::decide) {
        decision d;
        d.what = rr.what == route_action::misdirected ? action::misdirected : action::pass;
        d.reason = rr.reason;
        d.room = rr.room;
        return d;
    }
    return decide(*rr.room, ws, valid_cookie, now_ms, random, at);
}

decision engine::decide(const compiled_room& r, worker_state& ws, const payload* valid_cookie,
                        std::int64_t now_ms, rng& random, attempt at, bool solved) const {
    using config::queueing_method;
    decision d;
    d.room = &r;
    const event_phase ph = r.phase_at(now_ms);
    const settings s = r.settings_at(ph);
    if (s.suspended) {
        d.reason = pass_reason::suspended;
        return d;
    }
    auto& v = ws.view(*this, r);
    const room_state& st = *v.state;
    const room_limits lim = make_limits(s, ph, win_);
    const std::int64_t W = win_.window_ms;
    const std::int64_t now_w = floor_to(now_ms, W);
    const std::int64_t AW = active_window_ms(lim);  // admitted visitors' windows (finer)
    const std::int64_t now_aw = floor_to(now_ms, AW);
    room_deltas& deltas = *v.deltas;

    const payload* c = valid_cookie;
    if (c != nullptr && !trusted(r, *c, now_ms, W)) {
        c = nullptr;
    }

    // A session the origin revoked admits no more, on any node, and a queue place is spent by
    // its admission: a cookie with a refused ticket is a new visitor's.
    const bool refused = c != nullptr && refused_ticket(ws, st, *c);
    if (refused) {
        c = nullptr;
    }

    // Admitted visitor: passes while the session lives; counted again when the window moves.
    if (c != nullptr && c->accepted_at > 0) {
        const std::int64_t old_w = floor_to(c->last_check_in, AW);
        if (session_alive(*c, s, lim, now_ms)) {
            d.what = action::admit;
            d.cookie = *c;
            d.cookie_max_age_seconds = ceil_div_ms(
                s.disable_session_renewal ? c->accepted_at + s.session_ms - now_ms : s.session_ms,
                1000);
            if (!s.disable_session_renewal && old_w != now_aw) {
                const std::int64_t filed = filed_window(r, c->last_check_in);
                deltas.active.add(now_aw, 1);
                deltas.active.add(filed, -1);
                d.cookie.last_check_in = now_ms;
                d.cookie_changed = true;
                if (!active_window_live(filed, lim, now_ms + late_renewal_ms_) &&
                    ws.late_handed_.first_in(c->ticket, now_aw)) {
                    // The store lets this visitor's window go before the next sync may report
                    // the renewal: until then it would count the place free (and a lease or a
                    // top-up give it away). Handed over now, the next sync takes it, and a
                    // top-up before that holds the place (node_state::unreported_renewals).
                    ws.flush();
                }
            }
            return d;
        }
        // Expired: a new arrival now — at the back of the queue when the room queues, a fresh
        // session otherwise. The old session's count ends with its window.
        const std::int64_t ended_at =
            s.disable_session_renewal ? c->accepted_at + s.session_ms : old_w + AW + s.session_ms;
        d.ended_session_ms = std::max<std::int64_t>(0, std::min(ended_at, now_ms) - c->accepted_at);
        c = nullptr;
    }

    // Proof of work on joining (`challenge`): a challenged cookie holds no place, so its holder is
    // a new visitor. With a solution of its challenge, sent before the challenge grew stale, its
    // ticket joins the queue now, at the back (a challenge kept back buys no earlier place).
    // Copies of it join with the same ticket: one place, spent by the first admission.
    const bool queues = s.method == queueing_method::fifo || s.method == queueing_method::random;
    const bool challenging = queues && r.config().challenge.enabled;
    const payload* pending = nullptr;
    bool joining = false;
    if (c != nullptr && challenged(*c)) {
        if (now_ms - c->last_check_in <= win_.challenge_ttl_ms) {
            pending = c;
            joining = solved && challenging;
        }
        c = nullptr;
    }

    bool queued_cookie = c != nullptr;
    std::int64_t bucket = 0;
    std::uint64_t ticket = 0;
    std::uint32_t event_id = ph.event_id;
    std::int64_t old_w = -1;  // live waiting window this visitor is counted in; -1 = none
    if (queued_cookie) {
        queued_cookie = keeps_queue_place(*c, lim, now_ms, win_, ph.event_id);
        const std::int64_t ow = floor_to(c->last_check_in, W);
        if (queued_cookie && counted_waiting(*c) && waiting_window_live(ow, lim, now_ms)) {
            old_w = ow;
        }
        if (queued_cookie) {
            bucket = c->bucket;
            ticket = c->ticket;
            event_id = c->event_id;
        }
    }
    if (!queued_cookie) {
        ticket = joining ? pending->ticket : random();
        bucket = arrival_bucket(ph, now_ms, ticket);
    }

    // The refresh-rate watch (abuse_action, rooms that queue): each request of a queued visitor
    // is counted in its cookie, and one far faster than its Refresh is flagged for good. It
    // begins with the first request that carries the cookie: a new arrival holds no ticket yet.
    const config::abuse_action abuse = queues ? r.config().abuse : config::abuse_action::off;
    flood_reading flood;
    if (abuse != config::abuse_action::off && queued_cookie) {
        flood = count_request(c, s.refresh_ms, now_ms, win_);
        d.flagged_now = flood.flagged_now;
        if (flood.flagged_now && abuse != config::abuse_action::log) {
            // The place keeps a new ticket and the old one is refused on every worker and node
            // for as long as a cookie carrying it could keep a place: a cookie kept back from
            // before the flag is a new arrival's. This worker refuses it at once; the store lists
            // it to every node from their next syncs, in a list of its own, so that mass flagging
            // cannot push spent places and revoked sessions out of theirs. The old ticket leaves
            // the counts at once: it is one ticket, however many copies of it are flagged.
            ws.flag_refused_.remember(ticket);
            deltas.flag(ticket);
            deltas.leave_queue(ticket);
            ticket = random();
        }
    }
    const std::uint32_t flag_bit = flood.flagged ? visitor_flags::flagged : 0u;
    const auto stamp_watch = [&](payload& p) {
        p.ticket = ticket;
        p.flags |= flag_bit;
        p.flood_since = flood.since;
        p.flood_count = flood.count;
    };

    // infinite_queue: a flagged visitor sees the queue page as anyone and is not admitted. It
    // draws nothing, and its check-ins move no count: its ticket left the counts when it was
    // flagged, and the new one is never counted.
    if (flood.flagged && abuse == config::abuse_action::infinite_queue) {
        d.what = action::queue;
        d.cookie = *c;
        stamp_watch(d.cookie);
        d.cookie.flags |= visitor_flags::uncounted;
        d.cookie_changed = flood.flagged_now;
        d.cookie_max_age_seconds = ceil_div_ms(win_.queue_rejoin_ms, 1000);
        fill_page(r, s, ph, st, bucket, now_ms, false, d);
        return d;
    }

    // One draw per refresh interval: a counted visitor back before the Refresh it was given
    // (Cloudflare ignores refreshes before lastUpdated + refreshIntervalSeconds) gets the queue
    // page again, with no lottery draw, no slot, no top-up and no counter move. Its waiting
    // window outlives the interval (abandon_after_ms), so it stays counted as it is. A visitor
    // flagged under `slow` is held to its stretched Refresh even once its window lapsed.
    const bool slowed = flood.flagged && abuse == config::abuse_action::slow;
    const std::int64_t given_ms =
        old_w >= 0 || (slowed && queued_cookie) ? given_refresh_ms(*c) : 0;
    if (given_ms > 0 && now_ms < c->last_check_in + given_ms - win_.refresh_slack_ms && queues) {
        d.what = action::queue;
        d.cookie = *c;
        // A counted request dates the cookie; this one only adds to the watch's count.
        if (abuse != config::abuse_action::off && (!flood.flagged || flood.flagged_now)) {
            stamp_watch(d.cookie);
            d.cookie_changed = true;
        }
        d.cookie_max_age_seconds = ceil_div_ms(win_.queue_rejoin_ms, 1000);
        fill_page(r, s, ph, st, bucket, now_ms, false, d);
        d.refresh_seconds =
            std::max<std::int64_t>(1, ceil_div_ms(c->last_check_in + given_ms - now_ms, 1000));
        d.page.refresh_interval_seconds = d.refresh_seconds;
        return d;
    }

    // Only a ticket counted before may take a place through a hold: it is held to the Refresh
    // sealed in its cookie. A new arrival's first return is not, and could come at once.
    const bool counted_before = queued_cookie && counted_waiting(*c);
    bool admit = false;
    bool took_slot = false;
    bool eligible = false;
    std::int64_t older = 0;  // queued ahead of this visitor (FIFO)
    if (s.method == queueing_method::passthrough) {
        admit = true;
    } else if (!ph.prequeueing && !s.queue_all && !s.origin_unavailable &&
               !(slowed && flood.flagged_now)) {
        // (The request that flags a `slow` visitor draws nothing: its ticket was just refused.)
        const std::int64_t free = st.free_capacity();
        // After a top-up the first attempt's draw stands, unless its place was spent meanwhile
        // (a copy of its cookie was admitted): then it is a new arrival.
        const bool retry = at != attempt::first && !refused;
        // A new arrival is behind everyone counted, whatever the method: in a `random` room it
        // takes only the places beyond them (there is nothing to draw for), as a later bucket
        // does in a `fifo` one. A flood of new arrivals can take no place a ticket holder
        // waits for.
        const bool random_draw = s.method == queueing_method::random &&
                                 (queued_cookie || retry || st.waiting_total() == 0);
        if (random_draw) {
            eligible = random_eligible(st, s.refresh_ms, queued_cookie ? c : nullptr,
                                       counted_before, retry);
        } else {
            // The admission front: the oldest waiting bucket may always try; a later bucket when
            // the free capacity covers everyone ahead of it, or when places have stayed free for
            // front_hold_ms (a late Refresh of the front and a sync) while nobody ahead was
            // admitted or left: they are late, or gone and still counted. Letting a later bucket in
            // as soon as a place freed (the old slack of one refresh's admissions) let whoever
            // refreshed first take it, and passed the front's visitors who had not come back
            // yet (1-5 % FIFO inversions against real processes, issue 16). Buckets are arrival
            // windows in sealed cookies: no visitor can move itself into an earlier one. Only a
            // queued visitor counted before may take a place through the hold: it is held to the
            // Refresh sealed in its cookie, where a request without a place (no cookie, a lapsed
            // one, or a new arrival's first return) could ask every few milliseconds and pass
            // everyone waiting (and any challenge).
            // The free capacity is the snapshot's less the places this node gave later buckets
            // that the store's answer behind the snapshot does not hold yet (still in a worker's
            // deltas, or given since): with two places free for one visitor ahead, every later
            // visitor who came before the next sync took one, and a front that refreshes more
            // slowly (a background tab) found none left, again and again (real daemons: one
            // visitor passed by 13-22 later ones in a run, issue 16). Places the visitors ahead
            // took shrink the free capacity and the count ahead alike.
            // With other nodes live, each sees the same spare (the free capacity beyond everyone
            // ahead) and would give it away: three nodes that each saw 4 free for 3 ahead let
            // three later visitors in, and the front's own top-up found none left (simulator,
            // spike-3nodes: 4 seeds of 40 over 0.5 % inversions, 7 with abandonment). While
            // places bind, a node gives later buckets only its even share of the spare in its
            // snapshot, rounded down: on snapshots of one moment the nodes together pass no more
            // than the spare (the hold aside). Snapshots are of each node's own sync: one that
            // does not hold yet what the others gave since their last reports gives the node a
            // new share of a spare they partly used, so nodes syncing one after another pass
            // more, about a third more than the spare with three nodes. The rest waits for the
            // front, the next snapshot or the hold. While the rate binds, nodes still each give
            // all the spare they see: the sliding minute frees capacity all along, and shared
            // out evenly it starved the node with most of the traffic (simulator, outage-30s:
            // idle 2.76 -> 3.44 %), where the rate-bound scenarios showed no inversions worth
            // that (worst seed 0.08 %). Nodes live in the store that serve nobody count in the
            // split too (the counts carry no node's share of the traffic).
            older = queued_cookie ? st.waiting_before(bucket)
                                  : st.waiting_before(bucket) + st.waiting_in(bucket);
            const std::int64_t given_since =
                std::max<std::int64_t>(0, v.pool->taken_behind() - st.taken_behind_mark());
            const std::int64_t sharing =
                rules::places_bind(s.total_active_users, s.new_users_per_minute, st.counts())
                    ? std::max<std::int64_t>(1, st.nodes())
                    : 1;
            const std::int64_t spare = free - older;
            eligible = older == 0 || (spare > 0 && given_since < spare / sharing) ||
                       (counted_before && st.free_unclaimed_for(bucket, win_.front_hold_ms));
        }
        if (eligible) {
            if (v.pool->try_take(now_ms)) {
                admit = true;
                took_slot = true;
                if (older > 0) {
                    v.pool->note_taken_behind();
                    ++deltas.taken_behind;
                }
            } else if (at != attempt::after_second_top_up && v.pool->top_up_allowed(now_ms)) {
                // (After a top-up: its slots went to a visitor of another worker first, and a
                // grant of none would have suspended top-ups. The first visitor in an empty room
                // was queued so, by the second one 4 ms later: real daemons, issue 16.)
                // The store is asked next: give it this worker's latest numbers first (off the
                // fast path; a renewal of a lapsed lease needs them to be right).
                ws.flush();
                d.what = action::wait_for_slots;
                return d;
            }
        }
    }
    if (eligible || admit) {
        ++deltas.demand;
    }

    if (admit) {
        if (old_w >= 0) {
            deltas.waiting.add({bucket, old_w}, -1);
        }
        if (queued_cookie || joining) {
            deltas.leave_queue(ticket);  // out of the store's distinct counts, wherever it is
        }
        if (queued_cookie) {
            d.admission = assess_admission(*c, st, now_ms);
            // The admission spends the queue place, at once: a copy of the queued cookie (kept
            // back, shared, or sent again before this answer arrived) is a new arrival, on this
            // worker at once and on every node after the next sync. Spent at the decision, not
            // when the answer goes out: an answer that never goes out (the client closed first)
            // would leave the place to be admitted again and again, each time counted. The
            // session gets a ticket of its own, which the refusal leaves alone.
            deltas.revoke({ticket, -1});
            ws.remember_revoked(ticket);
            ticket = random();
        } else if (joining) {
            // A solved challenge admitted at once is spent the same way: its cookie, kept back,
            // is no second way in (a place in the queue) with the same solution.
            deltas.revoke({ticket, -1});
            ws.remember_revoked(ticket);
            ticket = random();
        }
        deltas.admitted.add(floor_to(now_ms, win_.rate_window_ms), 1);
        deltas.active.add(now_aw, 1);
        if (took_slot) {
            ++deltas.slots_used;
        }
        d.what = action::admit;
        d.challenge_solved = joining;
        d.cookie.room = r.id();
        d.cookie.bucket = bucket;
        d.cookie.accepted_at = now_ms;
        d.cookie.last_check_in = now_ms;
        d.cookie.ticket = ticket;
        d.cookie.event_id = event_id;
        d.cookie_changed = true;
        d.cookie_max_age_seconds = ceil_div_ms(s.session_ms, 1000);
        return d;
    }

    if (s.method == queueing_method::reject) {
        if (old_w >= 0) {
            deltas.waiting.add({bucket, old_w}, -1);
            deltas.leave_queue(ticket);
        }
        d.what = action::reject;
        fill_page(r, s, ph, st, bucket, now_ms, false, d);
        return d;
    }

    // A new visitor who would be queued in a room with `challenge` gets a challenge instead of a
    // place, and is counted nowhere until it solves it.
    if (challenging && !queued_cookie && !joining) {
        challenge(r, s, ph, st, pending, now_ms, random, d);
        return d;
    }

    // Queued: counted in (bucket, now's window); moved when the window changes. The cookie
    // dates this request and carries the Refresh given, so the next draw is due then.
    d.what = action::queue;
    d.challenge_solved = joining;
    d.cookie.room = r.id();
    d.cookie.bucket = bucket;
    d.cookie.accepted_at = 0;
    d.cookie.ticket = ticket;
    d.cookie.event_id = event_id;
    d.cookie_max_age_seconds = ceil_div_ms(win_.queue_rejoin_ms, 1000);
    // A new arrival holds no ticket yet: it is counted once it comes back with the cookie it is
    // given (a flood of cookieless requests counts nowhere). A queued cookie, or a solved
    // challenge joining, checks its ticket into this window: the store counts each ticket once,
    // in its latest window, whatever the copies, workers and nodes. This worker hands each
    // (ticket, window) over once, which only saves the store the copies.
    const bool arriving = !queued_cookie && !joining;
    if (old_w != now_w && !arriving && ws.counted_.first_in(ticket, now_w)) {
        deltas.waiting.add({bucket, now_w}, 1);
        if (old_w >= 0) {
            deltas.waiting.add({bucket, old_w}, -1);
        }
        deltas.check_in_ticket({ticket, bucket, now_w});
    }
    ++deltas.queued;
    fill_page(r, s, ph, st, bucket, now_ms, eligible, d);
    // The first estimate the visitor is shown stays in its cookie until its admission, which
    // compares the actual wait with it from the same instant.
    if (queued_cookie && c->estimate_shown_at != 0) {
        d.cookie.estimate_shown_at = c->estimate_shown_at;
        d.cookie.estimate_seconds = c->estimate_seconds;
    } else if (d.page.wait_time_known) {
        d.cookie.estimate_shown_at = now_ms;
        d.cookie.estimate_seconds = static_cast<std::uint32_t>(
            std::clamp<std::int64_t>(d.page.wait_time_seconds, 0, max_believed_wait_ms / 1000));
    }
    if (slowed) {
        // `slow`: told to come back flood_factor times later than anyone, and held to it.
        d.refresh_seconds =
            std::max(d.refresh_seconds, ceil_div_ms(s.refresh_ms, 1000)) * win_.flood_factor;
        d.page.refresh_interval_seconds = d.refresh_seconds;
    }
    d.cookie.last_check_in = now_ms;
    if (arriving) {
        // Counted from its first refresh: brought forward, so that a visitor who follows it is
        // in the counts (and ahead of later arrivals) within seconds.
        d.refresh_seconds = std::min(
            d.refresh_seconds, std::max<std::int64_t>(1, ceil_div_ms(win_.min_refresh_ms, 1000)));
        d.page.refresh_interval_seconds = d.refresh_seconds;
    }
    d.cookie.flags =
        static_cast<std::uint32_t>(std::min<std::int64_t>(d.refresh_seconds, std::int64_t{1} << 23)
                                   << visitor_flags::refresh_shift);
    if (arriving) {
        d.cookie.flags |= visitor_flags::uncounted;
    }
    stamp_watch(d.cookie);
    d.cookie_changed = true;
    return d;
}

void engine::challenge(const compiled_room& r, const settings& s, const event_phase& ph,
                       const room_state& st, const payload* pending, std::int64_t now_ms,
                       rng& random, decision& d) const {
    d.what = action::queue;
    if (pending != nullptr) {
        // The challenge the visitor is working on stays as it is: its seed is the cookie's.
        d.cookie = *pending;
    } else {
        d.cookie = payload{};
        d.cookie.room = r.id();
        d.cookie.ticket = random();
        d.cookie.bucket = floor_to(now_ms, win_.window_ms);
        d.cookie.last_check_in = now_ms;
        d.cookie.event_id = ph.event_id;
        d.cookie.flags =
            visitor_flags::challenged | rules::challenge_difficulty(r.config().challenge, s, st)
                                            << visitor_flags::difficulty_shift;
        d.cookie_changed = true;
        d.challenge_issued = true;
    }
    d.cookie_max_age_seconds =
        ceil_div_ms(d.cookie.last_check_in + win_.challenge_ttl_ms - now_ms, 1000);
    fill_page(r, s, ph, st, floor_to(now_ms, win_.window_ms), now_ms, false, d);
    // A browser without the page's script reloads the page at the room's pace: it cannot join,
    // but it is let in as any new visitor once the room has room.
    d.refresh_seconds = std::max<std::int64_t>(1, ceil_div_ms(s.refresh_ms, 1000));
    d.page.refresh_interval_seconds = d.refresh_seconds;
    d.page.challenge_required = true;
    d.page.challenge_difficulty = challenge_bits(d.cookie);
}

std::int64_t engine::filed_window(const compiled_room& r, std::int64_t at_ms) const {
    const event_phase ph = r.phase_at(at_ms);
    return floor_to(at_ms, active_window_ms(make_limits(r.settings_at(ph), ph, win_)));
}

std::int64_t engine::arrival_bucket(const event_phase& ph, std::int64_t now_ms,
                                    std::uint64_t ticket) const {
    const std::int64_t W = win_.window_ms;
    if (ph.prequeueing && ph.event->shuffle_at_event_start) {
        // Shuffle without per-visitor state: a prequeued visitor's bucket is drawn from the
        // prequeue span by its ticket, so the FIFO front admits them in random order at event
        // start and every later arrival (bucket ≥ start) queues behind them.
        std::int64_t first = floor_to(ph.prequeue_start_ms, W);
        std::int64_t n = std::max<std::int64_t>(1, (ph.start_ms - first) / W);
        return first + static_cast<std::int64_t>(ticket % static_cast<std::uint64_t>(n)) * W;
    }
    return floor_to(now_ms, W);
}

payload engine::revoke(const compiled_room& r, worker_state& ws, const payload& current,
                       std::int64_t now_ms, rng& random) const {
    const event_phase ph = r.phase_at(now_ms);
    const settings s = r.settings_at(ph);
    const room_limits lim = make_limits(s, ph, win_);
    if (current.accepted_at > 0 && !s.suspended) {
        // The store frees the place on the first revocation of this ticket only: a replayed
        // revoke (the same cookie sent N times, each answered `revoke`) ends one visitor.
        std::int64_t w = filed_window(
            r, s.disable_session_renewal ? current.accepted_at : current.last_check_in);
        auto& v = ws.view(*this, r);
        if (!v.state->revoked(current.ticket) && !ws.revoked_here(current.ticket)) {
            v.deltas->revoke({current.ticket, active_window_live(w, lim, now_ms) ? w : -1});
            ws.remember_revoked(current.ticket);
        }
    }
    // A new arrival now, with a new ticket (the old one stays refused), counted nowhere yet:
    // its first request counts it. Its check-in time dates it, so it ages like any queued
    // cookie and cannot be kept for a later queue or event.
    payload p;
    p.room = r.id();
    p.ticket = random();
    p.bucket = arrival_bucket(ph, now_ms, p.ticket);
    p.accepted_at = 0;
    p.last_check_in = now_ms;
    p.event_id = ph.event_id;
    p.flags = visitor_flags::uncounted;
    return p;
}

bool engine::refused_ticket(const worker_state& ws, const room_state& st, const payload& c) {
    return st.revoked(c.ticket) || st.flagged(c.ticket) ||
           (ws.revoked_.written > 0 && ws.revoked_.contains(c.ticket)) ||
           (ws.flag_refused_.written > 0 && ws.flag_refused_.contains(c.ticket));
}

cookie_standing engine::standing(const compiled_room& r, worker_state& ws, const payload& c,
                                 std::int64_t now_ms) const {
    const event_phase ph = r.phase_at(now_ms);
    const settings s = r.settings_at(ph);
    const room_limits lim = make_limits(s, ph, win_);
    if (!trusted(r, c, now_ms, win_.window_ms)) {
        return {};
    }
    if (refused_ticket(ws, *ws.view(*this, r).state, c)) {
        return {};  // decide() makes its holder a new arrival
    }
    if (challenged(c)) {
        // No place, but the visitor's work in progress: worth more than a dead cookie, so that a
        // dead one planted beside it (a sibling subdomain's) cannot hide it.
        return now_ms - c.last_check_in <= win_.challenge_ttl_ms ? cookie_standing{0, 1}
                                                                 : cookie_standing{};
    }
    if (c.accepted_at > 0) {
        // An ended session is worth nothing: decide() makes its holder a new arrival.
        return session_alive(c, s, lim, now_ms) ? cookie_standing{2, 0} : cookie_standing{};
    }
    if (!keeps_queue_place(c, lim, now_ms, win_, ph.event_id)) {
        return {};
    }
    return {1, -c.bucket};
}

}  // namespace waitroom::room
