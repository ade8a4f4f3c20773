#include "waitroom/room/engine.hpp"
#include "waitroom/util/clock.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ctime>

namespace waitroom::room {

namespace {

std::atomic<std::uint64_t> next_generation{1};

std::int64_t to_ms(config::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::int64_t ceil_div_ms(std::int64_t ms, std::int64_t unit) {
    return ms <= 0 ? 0 : (ms + unit - 1) / unit;
}

// Admissions per minute the queue can expect: the observed rate, or when nothing was admitted
// lately the turnover of a full room (sessions ending), never above new_users_per_minute.
double expected_rate(const settings& s, const room_state& st) {
    double observed = static_cast<double>(st.counts().admitted_last_minute);
    double session_min = std::max(1.0, static_cast<double>(s.session_ms) / 60'000.0);
    double turnover = static_cast<double>(s.total_active_users) / session_min;
    return std::min(static_cast<double>(s.new_users_per_minute), std::max(observed, turnover));
}

// Visitors the room admits while the next of its front comes back (min_refresh): a later bucket
// may try once fewer than these are ahead of it. Zero below one per refresh, so a room with a
// trickle of turnover keeps strict bucket order.
std::int64_t front_slack(const settings& s, const room_state& st, const windowing& w) {
    return static_cast<std::int64_t>(expected_rate(s, st) * static_cast<double>(w.min_refresh_ms) /
                                     60'000.0);
}

}  // namespace

std::uint32_t event_id_of(const config::event& ev) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : ev.name) {
        h ^= c;
        h *= 16777619u;
    }
    return h == 0 ? 1 : h;
}

std::string_view to_string(room_status_kind k) {
    switch (k) {
        case room_status_kind::not_queueing:
            return "not_queueing";
        case room_status_kind::queueing:
            return "queueing";
        case room_status_kind::event_prequeueing:
            return "event_prequeueing";
        case room_status_kind::suspended:
            return "suspended";
    }
    return "not_queueing";
}

std::string_view to_string(config::queueing_method m) {
    switch (m) {
        case config::queueing_method::fifo:
            return "fifo";
        case config::queueing_method::random:
            return "random";
        case config::queueing_method::passthrough:
            return "passthrough";
        case config::queueing_method::reject:
            return "reject";
    }
    return "fifo";
}

// ---- compiled_room ---------------------------------------------------------------------------

event_phase compiled_room::phase_at(std::int64_t now_ms) const {
    event_phase ph;
    for (const auto& ev : cfg_->events) {
        std::int64_t start = to_ms(ev.event_start_time);
        std::int64_t end = to_ms(ev.event_end_time);
        std::int64_t pre = ev.prequeue_start_time ? to_ms(*ev.prequeue_start_time) : start;
        if (now_ms >= std::min(pre, start) && now_ms < end) {
            ph.event = &ev;
            ph.event_id = event_id_of(ev);
            ph.start_ms = start;
            ph.end_ms = end;
            ph.prequeue_start_ms = std::min(pre, start);
            ph.prequeueing = now_ms < start;
            ph.active = !ph.prequeueing;
            return ph;
        }
    }
    return ph;
}

settings compiled_room::settings_at(const event_phase& ph) const {
    const auto& r = *cfg_;
    settings s;
    s.total_active_users = r.total_active_users;
    s.new_users_per_minute = r.new_users_per_minute;
    s.session_ms = r.session_duration.count();
    s.disable_session_renewal = r.disable_session_renewal;
    s.method = r.method;
    s.suspended = r.suspended;
    s.queue_all = r.queue_all;
    s.refresh_ms = std::max<std::int64_t>(1000, r.refresh_interval.count());
    s.custom_page_html = &r.custom_page_html;
    if (const config::event* ev = ph.event) {
        // An event's set fields replace the room's, from prequeue to its end.
        if (ev->total_active_users) {
            s.total_active_users = *ev->total_active_users;
        }
        if (ev->new_users_per_minute) {
            s.new_users_per_minute = *ev->new_users_per_minute;
        }
        if (ev->session_duration) {
            s.session_ms = ev->session_duration->count();
        }
        if (ev->disable_session_renewal) {
            s.disable_session_renewal = *ev->disable_session_renewal;
        }
        if (ev->queueing_method) {
            s.method = *ev->queueing_method;
        }
        if (ev->suspended) {
            s.suspended = *ev->suspended;
        }
        if (ev->custom_page_html) {
            s.custom_page_html = &*ev->custom_page_html;
        }
    }
    if (switches_ != nullptr) {
        // An operator's run-time switch wins over the file and the event until a reload
        // changes the file's value (room_overrides::reconcile).
        s.queue_all = switches_->queue_all().value_or(s.queue_all);
        s.suspended = switches_->suspended().value_or(s.suspended);
    }
    return s;
}

namespace {
room_limits make_limits(const settings& s, const event_phase& ph, const windowing& w) {
    room_limits l;
    l.total_active_users = s.total_active_users;
    l.new_users_per_minute = s.new_users_per_minute;
    l.session_ms = s.session_ms;
    l.abandon_after_ms = s.refresh_ms + w.abandon_margin_ms;
    l.window_ms = w.window_ms;
    l.rate_window_ms = w.rate_window_ms;
    l.rate_span_ms = w.rate_span_ms;
    l.rejoin_ms = w.queue_rejoin_ms;
    l.needs_slots = !s.suspended && !s.queue_all && !ph.prequeueing &&
                    s.method != config::queueing_method::passthrough;
    return l;
}

// What decide() believes of a cookie, in one place for decide() and standing().

// A cookie from the future (clock skew beyond a window, or a forged clock) is not trusted.
bool trusted(const compiled_room& r, const payload& c, std::int64_t now_ms,
             std::int64_t window_ms) {
    return c.room == r.id() && c.bucket <= now_ms + window_ms &&
           c.last_check_in <= now_ms + window_ms && c.accepted_at <= now_ms + window_ms;
}

// An admitted visitor's session still lives.
bool session_alive(const payload& c, const settings& s, const room_limits& lim,
                   std::int64_t now_ms) {
    return s.disable_session_renewal
               ? c.accepted_at + s.session_ms > now_ms
               : active_window_live(floor_to(c.last_check_in, lim.window_ms), lim, now_ms);
}

// A queued cookie counted in a waiting window (a revoke's is not: its first request counts it).
bool counted_waiting(const payload& c) {
    return (c.flags & visitor_flags::uncounted) == 0;
}

// A queued cookie keeps its place while it is counted in a live waiting window. Out of one (it
// lapsed, or it is a revoke's and was never counted) it keeps it for queue_rejoin_ms, and only
// under the event it was issued under (`event_id`, the phase's now): a cookie held back past a
// prequeue's start would otherwise stand ahead of everyone prequeued (and of the shuffle).
// Without a check-in time it has no age, so it starts over.
bool keeps_queue_place(const payload& c, const room_limits& lim, std::int64_t now_ms,
                       const windowing& w, std::uint32_t event_id) {
    if (c.last_check_in <= 0) {
        return false;
    }
    if (counted_waiting(c) &&
        waiting_window_live(floor_to(c.last_check_in, lim.window_ms), lim, now_ms)) {
        return true;
    }
    return now_ms - c.last_check_in <= w.queue_rejoin_ms && c.event_id == event_id;
}
}  // namespace

room_limits compiled_room::limits_at(std::int64_t now_ms) const {
    auto ph = phase_at(now_ms);
    return make_limits(settings_at(ph), ph, win_);
}

// ---- worker_state ----------------------------------------------------------------------------

worker_state::room_view& worker_state::view(const engine& e, const compiled_room& r) {
    std::uint64_t v = node_.version();
    if (v != snap_version_ || engine_generation_ != e.generation()) {
        bool new_snapshot = v != snap_version_;
        snap_ = node_.snapshot();
        snap_version_ = v;
        engine_generation_ = e.generation();
        views_.assign(e.rooms().size(), room_view{});
        for (const auto& room : e.rooms()) {
            const room_state* st = snap_->find(room.id());
            views_[room.index()] = room_view{st != nullptr ? st : &empty_, &node_.pool(room.id()),
                                             &deltas_[room.id()]};
        }
        if (new_snapshot) {
            // Once per sync, hand the deltas over; never wait for the sync task.
            node_.try_submit(deltas_);
        }
    }
    return views_[r.index()];
}

void worker_state::flush() {
    node_.submit(deltas_);
}

bool worker_state::revoked_here(std::uint64_t ticket) const {
    const std::size_t n = std::min(revoked_count_, revoked_here_.size());
    return std::find(revoked_here_.begin(), revoked_here_.begin() + static_cast<std::ptrdiff_t>(n),
                     ticket) != revoked_here_.begin() + static_cast<std::ptrdiff_t>(n);
}

void worker_state::remember_revoked(std::uint64_t ticket) {
    if (!revoked_here(ticket)) {
        revoked_here_[revoked_count_++ % revoked_here_.size()] = ticket;
    }
}

// ---- engine ----------------------------------------------------------------------------------

engine::engine(config::snapshot cfg, windowing win, std::shared_ptr<room_overrides> overrides)
    : cfg_(std::move(cfg)),
      win_(win),
      overrides_(std::move(overrides)),
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

decision engine::decide(const request_view& req, worker_state& ws,
                        const payload* valid_cookie, std::int64_t now_ms, rng& random,
                        attempt at) const {
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

decision engine::decide(const compiled_room& r, worker_state& ws,
                        const payload* valid_cookie, std::int64_t now_ms, rng& random,
                        attempt at) const {
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
        const std::int64_t old_w = floor_to(c->last_check_in, W);
        if (session_alive(*c, s, lim, now_ms)) {
            d.what = action::admit;
            d.cookie = *c;
            d.cookie_max_age_seconds = ceil_div_ms(
                s.disable_session_renewal ? c->accepted_at + s.session_ms - now_ms : s.session_ms,
                1000);
            if (!s.disable_session_renewal && old_w != now_w) {
                deltas.active.add(now_w, 1);
                deltas.active.add(old_w, -1);
                d.cookie.last_check_in = now_ms;
                d.cookie_changed = true;
            }
            return d;
        }
        // Expired: a new arrival now — at the back of the queue when the room queues, a fresh
        // session otherwise. The old session's count ends with its window.
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
        ticket = random();
        bucket = arrival_bucket(ph, now_ms, ticket);
    }

    // One draw per refresh interval: a counted visitor back before the Refresh it was given
    // (Cloudflare ignores refreshes before lastUpdated + refreshIntervalSeconds) gets the queue
    // page again, with no lottery draw, no slot, no top-up and no counter move. Its waiting
    // window outlives the interval (abandon_after_ms), so it stays counted as it is.
    const std::int64_t given_ms =
        old_w >= 0 ? static_cast<std::int64_t>(c->flags >> visitor_flags::refresh_shift) * 1000 : 0;
    if (given_ms > 0 && now_ms < c->last_check_in + given_ms - win_.refresh_slack_ms &&
        (s.method == queueing_method::fifo || s.method == queueing_method::random)) {
        d.what = action::queue;
        d.cookie = *c;
        d.cookie_max_age_seconds = ceil_div_ms(win_.queue_rejoin_ms, 1000);
        fill_page(r, s, ph, st, bucket, now_ms, false, d);
        d.refresh_seconds =
            std::max<std::int64_t>(1, ceil_div_ms(c->last_check_in + given_ms - now_ms, 1000));
        d.page.refresh_interval_seconds = d.refresh_seconds;
        return d;
    }

    bool admit = false;
    bool took_slot = false;
    bool eligible = false;
    if (s.method == queueing_method::passthrough) {
        admit = true;
    } else if (!ph.prequeueing && !s.queue_all) {
        const std::int64_t free = st.free_capacity();
        if (s.method == queueing_method::random) {
            std::int64_t waiting = st.waiting_total();
            // After a top-up the first attempt's draw stands, unless its place was spent
            // meanwhile (a copy of its cookie was admitted): then it is a new arrival.
            if (waiting == 0 || (at == attempt::after_top_up && !refused)) {
                eligible = true;
            } else if (queued_cookie || free >= waiting) {
                // A new arrival while others wait joins the queue and draws at its first
                // refresh, like them: a cookieless request is no free ticket in the lottery.
                // With room for everyone waiting there is nothing to draw for.
                double p = std::min(1.0, static_cast<double>(free) / static_cast<double>(waiting));
                eligible = std::uniform_real_distribution<double>(0.0, 1.0)(random) < p;
            }
        } else {
            // The admission front: the oldest waiting bucket may always try; a later bucket when
            // the free capacity plus what the room admits in one short refresh covers everyone
            // ahead of it. The snapshot lags the truth by a flush and a sync, and the last of
            // the front come back only every few seconds: waiting for the front to show empty
            // left the slots freed meanwhile idle at every bucket change.
            std::int64_t older = st.waiting_before(bucket);
            eligible = older == 0 || older < free + front_slack(s, st, win_);
        }
        if (eligible) {
            if (v.pool->try_take(now_ms)) {
                admit = true;
                took_slot = true;
            } else if (at == attempt::first && v.pool->top_up_allowed(now_ms)) {
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
        if (queued_cookie) {
            // The admission spends the queue place, at once: a copy of the queued cookie (kept
            // back, shared, or sent again before this answer arrived) is a new arrival, on this
            // worker at once and on every node after the next sync. Spent at the decision, not
            // when the answer goes out: an answer that never goes out (the client closed first)
            // would leave the place to be admitted again and again, each time counted. The
            // session gets a ticket of its own, which the refusal leaves alone.
            deltas.revoke({ticket, -1});
            ws.remember_revoked(ticket);
            ticket = random();
        }
        deltas.admitted.add(floor_to(now_ms, win_.rate_window_ms), 1);
        deltas.active.add(now_w, 1);
        if (took_slot) {
            ++deltas.slots_used;
        }
        d.what = action::admit;
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
        }
        d.what = action::reject;
        fill_page(r, s, ph, st, bucket, now_ms, false, d);
        return d;
    }

    // Queued: counted in (bucket, now's window); moved when the window changes. The cookie
    // dates this request and carries the Refresh given, so the next draw is due then.
    d.what = action::queue;
    d.cookie.room = r.id();
    d.cookie.bucket = bucket;
    d.cookie.accepted_at = 0;
    d.cookie.ticket = ticket;
    d.cookie.event_id = event_id;
    d.cookie_max_age_seconds = ceil_div_ms(win_.queue_rejoin_ms, 1000);
    if (old_w != now_w) {
        deltas.waiting.add({bucket, now_w}, 1);
        if (old_w >= 0) {
            deltas.waiting.add({bucket, old_w}, -1);
        }
    }
    ++deltas.queued;
    fill_page(r, s, ph, st, bucket, now_ms, eligible, d);
    d.cookie.last_check_in = now_ms;
    d.cookie.flags =
        static_cast<std::uint32_t>(std::min<std::int64_t>(d.refresh_seconds, std::int64_t{1} << 23)
                                   << visitor_flags::refresh_shift);
    d.cookie_changed = true;
    return d;
}

void engine::fill_page(const compiled_room& r, const settings& s, const event_phase& ph,
                       const room_state& st, std::int64_t bucket, std::int64_t now_ms,
                       bool eligible, decision& d) const {
    using config::queueing_method;
    page_model& p = d.page;
    p.room_name = r.config().name.empty() ? r.id() : r.config().name;
    p.in_waiting_room = d.what == action::queue;
    p.queueing_method = to_string(s.method);
    p.is_fifo_queue = s.method == queueing_method::fifo;
    p.is_random_queue = s.method == queueing_method::random;
    p.is_passthrough_queue = s.method == queueing_method::passthrough;
    p.is_reject_queue = s.method == queueing_method::reject;
    p.queue_all = s.queue_all;
    if (st.known()) {
        p.last_updated = st.last_updated_iso();
        p.last_updated_ms = st.counts().as_of_ms;
    } else {
        p.last_updated = util::iso8601_utc(now_ms);
        p.last_updated_ms = now_ms;
    }
    p.is_event_active = ph.active;
    p.is_event_prequeueing = ph.prequeueing;
    if (ph.event != nullptr) {
        p.shuffle_at_event_start = ph.event->shuffle_at_event_start;
        p.time_until_event_start = ceil_div_ms(ph.start_ms - now_ms, 60'000);
        p.time_until_event_end = ceil_div_ms(ph.end_ms - now_ms, 60'000);
        p.time_until_event_start_formatted = format_minutes(p.time_until_event_start);
        p.time_until_event_end_formatted = format_minutes(p.time_until_event_end);
    }
    const std::int64_t free = st.free_capacity();
    const std::int64_t waiting = st.waiting_total();
    p.queue_is_full = p.in_waiting_room || waiting > 0 || (st.known() && free == 0);

    std::int64_t refresh_ms = s.refresh_ms;
    if (d.what == action::reject) {
        d.refresh_seconds = 0;
        p.refresh_interval_seconds = 0;
        return;
    }
    const double rate = expected_rate(s, st);  // per minute
    const std::int64_t older = st.waiting_before(bucket);
    if (s.method == queueing_method::random) {
        // Each refresh has the same chance; per minute about rate / waiting of the queue gets
        // in, so the wait is geometric: the q-quantile is ln(1 − q) / ln(1 − chance) minutes.
        p.queue_position = waiting / 2;
        if (rate > 0 && !s.queue_all && !ph.prequeueing) {
            double chance =
                std::min(1.0, rate / static_cast<double>(std::max<std::int64_t>(1, waiting)));
            auto quantile = [&](double q) -> std::int64_t {
                if (chance >= 1.0) {
                    return 1;
                }
                return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(
                                                     std::log(1.0 - q) / std::log(1.0 - chance))));
            };
            p.wait_time_known = true;
            p.wait_time_25_percentile = quantile(0.25);
            p.wait_time_50_percentile = quantile(0.50);
            p.wait_time_75_percentile = quantile(0.75);
            p.wait_time = p.wait_time_50_percentile;
        }
    } else {
        const std::int64_t ahead = older + st.waiting_in(bucket) / 2;
        p.queue_position = ahead;
        if (rate > 0 && !s.queue_all) {
            // The queue ahead drains by admissions and by visitors giving up (h per minute):
            // a' = −rate − h·a reaches 0 after ln(1 + h·a / rate) / h minutes.
            const double h = st.abandon_per_minute();
            const double a = static_cast<double>(ahead);
            const double turn = h > 1e-6 ? std::log1p(h * a / rate) / h : a / rate;
            std::int64_t minutes = static_cast<std::int64_t>(std::ceil(turn));
            if (ph.prequeueing) {
                minutes += ceil_div_ms(ph.start_ms - now_ms, 60'000);
            }
            p.wait_time_known = true;
            p.wait_time = std::max<std::int64_t>(1, minutes);
            p.wait_time_25_percentile = p.wait_time;
            p.wait_time_50_percentile = p.wait_time;
            p.wait_time_75_percentile = p.wait_time;
        }
        // Adaptive refresh: come back about when the turn is expected, soon when it is near.
        if (ph.prequeueing) {
            refresh_ms = std::clamp(ph.start_ms - now_ms,
                                    std::min(win_.min_refresh_ms, s.refresh_ms), s.refresh_ms);
        } else if (s.queue_all) {
            refresh_ms = s.refresh_ms;
        } else if (eligible) {
            refresh_ms = std::min(win_.min_refresh_ms, s.refresh_ms);
        } else if (rate > 0) {
            double beyond = static_cast<double>(older - free - front_slack(s, st, win_));
            double turn_ms = beyond <= 0 ? 0.0 : beyond / (rate / 60'000.0);
            refresh_ms = std::clamp(static_cast<std::int64_t>(turn_ms),
                                    std::min(win_.min_refresh_ms, s.refresh_ms), s.refresh_ms);
        }
    }
    if (p.wait_time_known) {
        p.wait_time_hours = p.wait_time / 60;
        p.wait_time_hour_minutes = p.wait_time % 60;
        p.wait_time_formatted = format_minutes(p.wait_time);
    }
    refresh_ms = std::max<std::int64_t>(refresh_ms, 1000);
    d.refresh_seconds = ceil_div_ms(refresh_ms, 1000);
    p.refresh_interval_seconds = d.refresh_seconds;
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

payload engine::revoke(const compiled_room& r, worker_state& ws,
                               const payload& current, std::int64_t now_ms,
                               rng& random) const {
    const event_phase ph = r.phase_at(now_ms);
    const settings s = r.settings_at(ph);
    const room_limits lim = make_limits(s, ph, win_);
    if (current.accepted_at > 0 && !s.suspended) {
        // The store frees the place on the first revocation of this ticket only: a replayed
        // revoke (the same cookie sent N times, each answered `revoke`) ends one visitor.
        std::int64_t w =
            floor_to(s.disable_session_renewal ? current.accepted_at : current.last_check_in,
                     win_.window_ms);
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

room_status engine::status(const compiled_room& r, const room_state& st,
                           std::int64_t now_ms) const {
    const event_phase ph = r.phase_at(now_ms);
    const settings s = r.settings_at(ph);
    room_status out;
    if (ph.event != nullptr) {
        out.event_id = ph.event->name;
    }
    out.estimated_queued_users = st.waiting_total();
    out.estimated_total_active_users = st.counts().active;
    if (s.suspended) {
        out.status = room_status_kind::suspended;
    } else if (ph.prequeueing) {
        out.status = room_status_kind::event_prequeueing;
    } else if (st.waiting_total() > 0 || s.queue_all) {
        out.status = room_status_kind::queueing;
    }
    double rate = expected_rate(s, st);
    if (out.estimated_queued_users > 0 && rate > 0) {
        out.max_estimated_time_minutes = static_cast<std::int64_t>(
            std::ceil(static_cast<double>(out.estimated_queued_users) / rate));
        if (ph.prequeueing) {
            out.max_estimated_time_minutes += ceil_div_ms(ph.start_ms - now_ms, 60'000);
        }
    }
    return out;
}

bool engine::refused_ticket(const worker_state& ws, const room_state& st,
                            const payload& c) {
    return st.revoked(c.ticket) || (ws.revoked_count_ > 0 && ws.revoked_here(c.ticket));
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
