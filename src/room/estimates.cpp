// What a queued visitor is told: the page values (position, wait-time estimate, event times)
// and the adaptive Refresh, and the room's status for the JSON API.
#include "admission_rules.hpp"
#include "waitroom/room/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace waitroom::room {

using rules::ceil_div_ms;
using rules::expected_rate;
using rules::front_slack;
using rules::turnover_if;

namespace {

// Beyond any wait worth telling (about 19 years): keeps the roundings below in range whatever
// the counts.
constexpr double max_wait_minutes = 1e7;

// waitTimeSeconds: the estimate to the nearest 10 s, at least 10 s. Whole minutes make a 90 s
// wait read 1 or 2 (33 % off either way), and most waits of a spike are a few minutes; finer
// than 10 s would claim a precision no estimate of a queue has.
std::int64_t wait_seconds(double minutes) {
    const double m = std::clamp(minutes, 0.0, max_wait_minutes);
    return std::max<std::int64_t>(10, std::llround(m * 6.0) * 10);
}

// The visitors a FIFO arrival bucket will hold, from its count in the snapshot. Order within a
// bucket is not kept: a visitor is expected halfway through its bucket's visitors, those who
// arrive after it included. While the bucket was still open at the snapshot, its count is the
// arrivals so far, extrapolated to the whole window at their rate, at most doubled (a first
// arrival a moment into the window tells no rate, and a spike ends). Counting only those seen
// told the first of a spike, who queue while their bucket fills, a third of their place
// (issue 16: position 0-1 for the first 11 of a spike, admitted 11th to 18th).
std::int64_t own_bucket_expected(const room_state& st, std::int64_t bucket,
                                 std::int64_t window_ms) {
    const std::int64_t n = st.waiting_in(bucket);
    const std::int64_t as_of = st.counts().as_of_ms;
    // Open at the snapshot: within the window before it (compared so that no bucket a cookie
    // carries, however far off, makes the difference overflow).
    if (n <= 0 || bucket > as_of || bucket <= as_of - window_ms ||
        n > std::numeric_limits<std::int64_t>::max() / 4) {
        return n;
    }
    const std::int64_t elapsed = as_of - bucket;
    const double seen = static_cast<double>(std::max({elapsed, window_ms / 2, std::int64_t{1}}));
    return std::llround(static_cast<double>(n) * static_cast<double>(window_ms) / seen);
}

}  // namespace

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
    p.origin_unavailable = s.origin_unavailable;
    p.last_updated_ms = st.known() ? st.counts().as_of_ms : now_ms;
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
            p.wait_time_seconds =
                chance >= 1.0 ? 60 : wait_seconds(std::log(0.5) / std::log(1.0 - chance));
        }
    } else {
        const std::int64_t half = own_bucket_expected(st, bucket, win_.window_ms) / 2;
        const std::int64_t ahead =
            std::min(older, std::numeric_limits<std::int64_t>::max() - half) + half;
        p.queue_position = ahead;
        if (rate > 0 && !s.queue_all) {
            // The queue ahead drains by admissions and by visitors giving up (h per minute):
            // a' = −r − h·a reaches 0 after ln(1 + h·a / r) / h minutes (no shorter than a
            // minute of the prior allows, below). To the nearest minute (rounding up added half a
            // minute to every estimate), at least 1.
            const double h = st.abandon_per_minute();
            const double a = static_cast<double>(ahead);
            const std::int64_t before_start =
                ph.prequeueing ? ceil_div_ms(ph.start_ms - now_ms, 60'000) : 0;
            // A room that filled within the last minute (everyone in it admitted lately, and
            // the active limit the one that binds) and started queueing then frees no place
            // before a session has passed since: each of its visitors holds its place at least
            // session_duration after its admission. The turnover comes after that (issue 16:
            // the first queued waited 70-100 s for places the estimate said would free at once).
            // The snapshot may not show the queue yet (nor the last admissions, or any: it lags
            // a flush and a sync): a visitor queued before then is the queue's start (without
            // it, the first few of a spike are told 10 s of a 90 s wait). A prequeue's wait is
            // the time to the event's start.
            const bool filled_lately =
                !ph.prequeueing &&
                rules::filled_lately(s.total_active_users, s.new_users_per_minute, st.counts());
            const std::int64_t queue_start =
                st.queueing_since_ms() > 0 ? st.queueing_since_ms() : now_ms;
            const std::int64_t dead_ms =
                st.turnover_per_minute() <= 0 && filled_lately
                    ? std::max<std::int64_t>(0, queue_start + s.session_ms - now_ms)
                    : 0;
            const double dead = static_cast<double>(dead_ms) / 60'000.0;
            // Minutes of turnover r that the queue ahead needs: those ahead who will give up
            // need no place, and no more of them than a minute of the prior takes while the
            // rate is the prior (room_state::prior_share_staying).
            const double prior_stays = st.prior_share_staying();
            auto draining_minutes = [&](double r) {
                return h > 1e-6 ? std::max(std::log1p(h * a / r) / h, prior_stays * a / r) : a / r;
            };
            // The room knows when the places held now were filled, and about how long they are
            // held (the prior's hold until places are seen to free): the wait is when the
            // places the queue ahead needs will have freed (st.frees(); the linear model spread
            // a generation's frees evenly, telling a third too much between generations, then
            // too little, and took a spike's places as all filled when it started queueing).
            // Capacity free now is the front's. Only while places bind: the schedule does not
            // model the rate limit (the turnover measures it), and the wait is never shorter
            // than the rate limit allows.
            const room_counts& c = st.counts();
            const bool scheduled =
                !ph.prequeueing &&
                rules::places_bind(s.total_active_users, s.new_users_per_minute, c) &&
                st.frees().ready();
            auto turnover_minutes = [&](double r, bool by_schedule) {
                const double linear = dead + draining_minutes(r);
                if (!by_schedule) {
                    return linear;
                }
                const double places =
                    r * draining_minutes(r) + 1.0 - static_cast<double>(st.free_capacity());
                const double since =
                    static_cast<double>(std::max<std::int64_t>(0, now_ms - c.as_of_ms));
                const double wait = std::max(0.0, st.frees().wait_ms(places) - since) / 60'000.0;
                const double by_rate =
                    places / static_cast<double>(std::max<std::int64_t>(1, s.new_users_per_minute));
                // Whatever the counts taught the schedule (a store's can be anything), it tells
                // no more than a third of the linear model's wait, nor more than three times it
                // and a session (a generation of frees is at most about a session and a visit
                // away): nothing a real crowd could not.
                const double session = static_cast<double>(s.session_ms) / 60'000.0;
                return std::clamp(std::max(wait, by_rate), linear / 3.0, 3.0 * linear + session);
            };
            auto minutes_at = [&](double r, bool by_schedule) {
                return std::max<std::int64_t>(
                    1, std::llround(std::min(turnover_minutes(r, by_schedule), max_wait_minutes)) +
                           before_start);
            };
            p.wait_time_known = true;
            p.wait_time = minutes_at(rate, scheduled);
            p.wait_time_seconds = wait_seconds(
                turnover_minutes(rate, scheduled) +
                (ph.prequeueing ? static_cast<double>(ph.start_ms - now_ms) / 60'000.0 : 0.0));
            p.wait_time_50_percentile = p.wait_time;
            if ((scheduled && st.frees().measured()) || st.turnover_per_minute() > 0) {
                p.wait_time_25_percentile = p.wait_time;
                p.wait_time_75_percentile = p.wait_time;
            } else {
                // Nothing seen of the holds yet: the range from visitors who leave at once to
                // visitors who stay twice as long as session_duration, around the estimate.
                p.wait_time_25_percentile =
                    std::min(p.wait_time, minutes_at(turnover_if(s, rules::fast_sessions), false));
                p.wait_time_75_percentile =
                    std::max(p.wait_time, minutes_at(turnover_if(s, rules::slow_sessions), false));
            }
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
            // Bound by new_users_per_minute, places come back when the sliding minute's
            // admissions leave it, at known times: a burst admitted together (an event's start)
            // frees together a minute later, which beyond / rate spreads over the minute. The
            // cohort it is for, told the full Refresh just before, came back after the front's
            // hold had given those places to later buckets (the simulator's event-shuffle). So
            // come back by when the places beyond have left the minute, if that is sooner. (From
            // a snapshot older than that moment, the store away, they are told the front's
            // Refresh until it returns: they are next once it does. Told the Refresh of their
            // place instead, the simulator's outage-30s idled 2.86 % for 2.68 %.) Visitors beyond
            // the whole minute's admissions skip the walk, and it stops at now: sub-windows
            // dated later come from a clock ahead, and at most a minute's (241) come before.
            const room_counts& c = st.counts();
            if (beyond > 0 && beyond <= static_cast<double>(c.admitted_last_minute) &&
                !rules::places_bind(s.total_active_users, s.new_users_per_minute, c)) {
                double leaving = 0;
                for (const auto& [w, n] : c.admitted_windows) {
                    if (w > now_ms) {
                        break;
                    }
                    leaving += static_cast<double>(std::max<std::int64_t>(0, n));
                    if (leaving >= beyond) {
                        const std::int64_t at = w + win_.rate_window_ms + win_.rate_span_ms;
                        turn_ms = std::min(
                            turn_ms, static_cast<double>(std::max<std::int64_t>(0, at - now_ms)));
                        break;
                    }
                }
            }
            // (Clamped as a double: a tiny learned rate makes turn_ms larger than any integer.)
            refresh_ms = static_cast<std::int64_t>(std::clamp(
                turn_ms, static_cast<double>(std::min(win_.min_refresh_ms, s.refresh_ms)),
                static_cast<double>(s.refresh_ms)));
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

}  // namespace waitroom::room
