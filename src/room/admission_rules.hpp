#pragma once
// The rules the engine's parts share (engine.cpp decides, estimates.cpp estimates,
// compiled_room.cpp applies a room's phase): time arithmetic, the admission rate a queue can
// expect, a room's limits at one instant, and what decide() believes of a cookie. Private to
// src/room/.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>

#include "waitroom/room/engine.hpp"

namespace waitroom::room::rules {

inline std::int64_t to_ms(config::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

inline std::int64_t ceil_div_ms(std::int64_t ms, std::int64_t unit) {
    return ms <= 0 ? 0 : (ms + unit - 1) / unit;
}

// The turnover of a full room whose visitors each hold their place for `sessions` times
// session_duration, per minute, never above new_users_per_minute. A place is held
// session_duration after the visitor's last request, so 1 is the fastest turnover there is.
inline double turnover_if(std::int64_t total_active_users, std::int64_t new_users_per_minute,
                          std::int64_t session_ms, double sessions) {
    const double session_min = std::max(1.0, static_cast<double>(session_ms) / 60'000.0);
    return std::min(static_cast<double>(new_users_per_minute),
                    static_cast<double>(total_active_users) / (sessions * session_min));
}
inline double turnover_if(const settings& s, double sessions) {
    return turnover_if(s.total_active_users, s.new_users_per_minute, s.session_ms, sessions);
}

// The room filled within the last minute: everyone in it was admitted lately, and the active
// limit is the one that binds. Such a room frees no place before a session has passed since
// (each visitor holds its place session_duration after its last request): the estimate waits
// for that session, and the learned turnover starts after it (room_state).
// The active limit binds, not the rate: no more places are free than the minute still allows.
inline bool places_bind(std::int64_t total_active_users, std::int64_t new_users_per_minute,
                        const room_counts& c) {
    return total_active_users - c.active <= new_users_per_minute - c.admitted_last_minute;
}

inline bool filled_lately(std::int64_t total_active_users, std::int64_t new_users_per_minute,
                          const room_counts& c) {
    return c.admitted_last_minute >= c.active &&
           places_bind(total_active_users, new_users_per_minute, c);
}

// Before the room has queued for a minute it has not seen its turnover; it assumes a visitor
// holds a place 1.75 sessions (the free schedule's prior: 1.35 to 2.15, a visit of about a third
// to one and a sixth sessions, then the session after its last request), and gives the range from
// leaving at once (1) to staying twice as long as session_duration (3) as the 25th and 75th
// percentiles. Visitors who waited for a place use it for a while, and rarely much longer than
// the session the operator sized for a visit: the fidelity harness's crowd browses 20-60 s of
// a one-minute session, the simulator's built-ins 0-4 minutes of five. The prior of 1 to 3
// sessions told the first of a spike a third short and the back of its queue too long
// (issue 16, bench/README.md).
inline constexpr double prior_sessions = free_schedule::prior_hold_sessions;
inline constexpr double fast_sessions = 1.0;
inline constexpr double slow_sessions = 3.0;

// Visitors give up while they wait, and a room measures how many only once 20 wait a minute
// behind its front (room_state::abandon_per_minute); until then it assumes a fifth of the queue
// a minute, fading over a session of queueing, and never more of the queue ahead than a minute of
// it takes (room_state::prior_share_staying). A queue's first answers cannot tell a crowd that
// will give up from one that will not (nobody has yet): this is between the two (issue 16: with
// none assumed, a crowd of which 30 % give up after half a minute was told a fifth too long at
// its first answer, one that stays a few points short; a tenth a minute still told the first a
// tenth too long, the second 5 % short, on the real daemons; a fifth centres the two).
inline constexpr double prior_abandon_per_minute = 0.2;

// Admissions per minute the queue can expect: the turnover the room learned while queueing
// (room_state::turnover_per_minute, which starts from this prior), else the prior above; never
// above new_users_per_minute.
// (Taking the configured total / session as the rate, or the sliding minute's admissions
// while it still held the room's filling, told visitors half their real wait: issue 16.)
inline double expected_rate(const settings& s, const room_state& st) {
    const double learned = st.turnover_per_minute();
    return learned > 0 ? std::min(static_cast<double>(s.new_users_per_minute), learned)
                       : turnover_if(s, prior_sessions);
}

// Visitors the room admits while the next of its front comes back (min_refresh): the adaptive
// Refresh asks visitors this close to the front to come back soon. Zero below one per refresh.
inline std::int64_t front_slack(const settings& s, const room_state& st, const windowing& w) {
    return static_cast<std::int64_t>(expected_rate(s, st) * static_cast<double>(w.min_refresh_ms) /
                                     60'000.0);
}

inline room_limits make_limits(const settings& s, const event_phase& ph, const windowing& w) {
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
//
// A cookie from the future (clock skew beyond a window, or a forged clock) is not trusted.
inline bool trusted(const compiled_room& r, const payload& c, std::int64_t now_ms,
                    std::int64_t window_ms) {
    return c.room == r.id() && c.bucket <= now_ms + window_ms &&
           c.last_check_in <= now_ms + window_ms && c.accepted_at <= now_ms + window_ms;
}

// An admitted visitor's session still lives.
inline bool session_alive(const payload& c, const settings& s, const room_limits& lim,
                          std::int64_t now_ms) {
    return s.disable_session_renewal
               ? c.accepted_at + s.session_ms > now_ms
               : active_window_live(floor_to(c.last_check_in, active_window_ms(lim)), lim, now_ms);
}

// A queued cookie counted in a waiting window (a revoke's is not: its first request counts it).
inline bool counted_waiting(const payload& c) {
    return (c.flags & visitor_flags::uncounted) == 0;
}

// A queued cookie keeps its place while it is counted in a live waiting window. Out of one (it
// lapsed, or it is a revoke's and was never counted) it keeps it for queue_rejoin_ms, and only
// under the event it was issued under (`event_id`, the phase's now): a cookie held back past a
// prequeue's start would otherwise stand ahead of everyone prequeued (and of the shuffle).
// Without a check-in time it has no age, so it starts over.
inline bool keeps_queue_place(const payload& c, const room_limits& lim, std::int64_t now_ms,
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

// The Refresh a queued cookie was last given, in ms (0 = none recorded).
inline std::int64_t given_refresh_ms(const payload& c) {
    return static_cast<std::int64_t>(c.flags >> visitor_flags::refresh_shift) * 1000;
}

inline bool flagged(const payload& c) {
    return (c.flags & visitor_flags::flagged) != 0;
}

// The difficulty of a new challenge: the room's minimum, one bit more (twice the work) for each
// doubling of the queue's length in minutes of admissions, at most the room's maximum. A queue
// shorter than a minute asks the minimum.
inline unsigned challenge_difficulty(const config::challenge_settings& c, const settings& s,
                                     const room_state& st) {
    const auto minutes = static_cast<std::uint64_t>(
        std::max<std::int64_t>(0, st.waiting_total()) /
        std::max<std::int64_t>(1, s.new_users_per_minute));
    const unsigned bits = c.min_difficulty + static_cast<unsigned>(std::bit_width(minutes));
    return std::min({bits, c.max_difficulty, visitor_flags::difficulty_mask});
}

// One request of a queued visitor, counted for the refresh-rate watch (abuse_action).
struct flood_reading {
    std::int64_t since = 0;    // the cookie's new flood_since (0 once flagged: nothing to count)
    std::uint32_t count = 0;   // the cookie's new flood_count
    bool flagged = false;      // flagged by this request or before
    bool flagged_now = false;  // this request crossed the line
};

// Counts a request of `c` (null: a new arrival) at `now_ms`. The count runs per flood_span_ms
// from the first request of the span; a visitor is flagged once a span holds more than
// flood_factor times the requests its Refresh allows (span / Refresh, rounded up), its own
// Refresh or else the room's. Every request counts, an early refresh as much as a due one: a
// visitor who follows Refresh makes about span / Refresh of them.
inline flood_reading count_request(const payload* c, std::int64_t room_refresh_ms,
                                   std::int64_t now_ms, const windowing& w) {
    flood_reading f;
    if (c != nullptr && flagged(*c)) {
        f.flagged = true;
        return f;
    }
    if (c == nullptr || c->flood_since == 0 || c->flood_since > now_ms ||
        now_ms - c->flood_since >= w.flood_span_ms) {
        f.since = now_ms;
        f.count = 1;
        return f;
    }
    f.since = c->flood_since;
    f.count = c->flood_count < 0xFFFF'FFFFu ? c->flood_count + 1 : c->flood_count;
    const std::int64_t given = std::max<std::int64_t>(
        1000, given_refresh_ms(*c) > 0 ? given_refresh_ms(*c) : room_refresh_ms);
    const std::int64_t allowed =
        w.flood_factor * std::max<std::int64_t>(1, ceil_div_ms(w.flood_span_ms, given));
    if (f.count > allowed) {
        f.flagged = f.flagged_now = true;
        f.since = 0;
        f.count = 0;
    }
    return f;
}

}  // namespace waitroom::room::rules
