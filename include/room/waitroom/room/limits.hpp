#pragma once
// The counting rules of DESIGN.md §4 shared by the room engine (which adds to counters) and every
// state store (which sums them): window sizes, the limits in force, and when a window stops
// counting. Keeping them in one place means a node and the store always agree on a window.

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace waitroom::room {

// Granularity of the counters. The defaults are the tuned values; the simulator may vary them.
struct windowing {
    std::int64_t window_ms = 10'000;          // active/waiting windows and arrival buckets
    std::int64_t rate_window_ms = 250;        // sub-windows of the sliding minute (admitted);
                                              // the oldest counts whole, so the minute is in
                                              // effect span + this (1 s left ~3% idle)
    std::int64_t rate_span_ms = 60'000;       // new_users_per_minute is per this span
    std::int64_t abandon_margin_ms = 5'000;   // slack over refresh_interval before a queued
                                              // visitor who stopped refreshing is dropped
    std::int64_t min_refresh_ms = 2'000;      // adaptive refresh: visitors near the front
                                              // (3 s left the simulator's rooms 0.2-0.5 points
                                              // idler: issue 16, bench/README.md)
    std::int64_t front_hold_ms = 8'000;       // a freed place is held this long for the oldest
                                              // waiting bucket before a later one may take it:
                                              // a front visitor back at 2.5 times a 3 s
                                              // Refresh (a background tab; one whose window
                                              // just became the front may be on a longer one
                                              // than min_refresh) and a sync (issue 16)
    std::int64_t queue_rejoin_ms = 600'000;   // a queued cookie silent longer than this starts
                                              // over at the back
    std::int64_t refresh_slack_ms = 1'000;    // a refresh this much before its due time still
                                              // counts (clock skew between nodes)
    std::int64_t flood_span_ms = 60'000;      // abuse_action: requests are counted per this span
    std::int64_t flood_factor = 5;            // abuse_action: more than this many times the
                                              // refreshes the Refresh allows in a span flags;
                                              // `slow` also stretches the Refresh by it
    std::int64_t challenge_ttl_ms = 600'000;  // challenge: a solution is taken this long after
                                              // the challenge was issued; later, a new one
};

// The limits of one room at one instant (event overrides applied), as a store needs them to sum
// counters and size leases. Plain values so a Redis script can take them as arguments.
struct room_limits {
    std::int64_t total_active_users = 0;
    std::int64_t new_users_per_minute = 0;
    std::int64_t session_ms = 300'000;       // session_duration
    std::int64_t abandon_after_ms = 25'000;  // refresh_interval + abandon margin
    std::int64_t window_ms = 10'000;
    std::int64_t rate_window_ms = 250;
    std::int64_t rate_span_ms = 60'000;
    std::int64_t rejoin_ms = 600'000;  // windowing::queue_rejoin_ms: how long a queued cookie
                                       // that stopped refreshing keeps its place
    bool needs_slots = true;  // false while suspended, passthrough, queue_all or prequeueing
};

inline std::int64_t floor_to(std::int64_t t, std::int64_t step) {
    std::int64_t q = t / step;
    if (t % step != 0 && t < 0) {
        --q;
    }
    return q * step;
}

// The windows admitted visitors are counted in by their last check-in: a sixtieth of the
// session, whole seconds, at least 1 s and at most window_ms. A session is held until the end of
// its last check-in's window plus session_duration, so a 10 s window held each ending session
// ~5 s too long on average (5 % idle places with 1-minute sessions, issue 16); a sixtieth keeps
// that under 1 % of any session and a room's live active windows about 61, whatever its
// session. Derived from the limits alone, so every node and the Redis script (room.lua's
// active_window) agree without a new argument.
inline std::int64_t active_window_ms(const room_limits& l) {
    const std::int64_t sixtieth = l.session_ms / 60'000 * 1'000;
    return std::clamp<std::int64_t>(sixtieth, std::min<std::int64_t>(1'000, l.window_ms),
                                    l.window_ms);
}

// An `active` window (start ms, of active_window_ms) still counts at `now` while a visitor last
// seen in it may still hold a session. Sessions are judged against the same boundary (see
// session_alive).
inline bool active_window_live(std::int64_t start, const room_limits& l, std::int64_t now) {
    return start + active_window_ms(l) + l.session_ms > now;
}

// A `waiting` window still counts while its visitors may still be refreshing. A visitor who
// refreshes at least every refresh_interval is always in a live window; one who stopped is
// dropped at most window + refresh_interval + margin after the last refresh.
inline bool waiting_window_live(std::int64_t start, const room_limits& l, std::int64_t now) {
    return start + l.window_ms + l.abandon_after_ms > now;
}

// A refused ticket (remembered from the window of the store's first word of it) stays refused
// while any cookie that carries it may still come back with a place: an admitted session's
// cookie while its session may live, a queued cookie (a copy of one whose place was spent by its
// admission) while it may rejoin. Its last check-in is at most that window plus the
// revocation's way to every node (a sync or two, well under a window).
inline bool revocation_live(std::int64_t start, const room_limits& l, std::int64_t now) {
    return start + 2 * l.window_ms + std::max({l.session_ms, l.rejoin_ms, l.abandon_after_ms}) >
           now;
}

// The most refused tickets (revoked sessions, and queue places spent by an admission) a store
// remembers per room: about 400 admissions from the queue per minute over the rejoin time. Past
// it the oldest are forgotten first, so that the newest are always refused; a forgotten ticket's
// copies hold their places again (each taking a place within the limits, like anyone), and a
// replayed revoke of a forgotten session may free its window once more (windows count for at
// least zero). The Redis script holds the same number.
inline constexpr std::size_t max_revoked_sessions = 4096;

// The most tickets refused by a flag (abuse_action) a store remembers per room, in a list of
// their own (so that mass flagging pushes no spent place out of the refused tickets), each for
// as long as a refused ticket is (revocation_live). Past it the oldest are forgotten first. The
// Redis script holds the same number.
inline constexpr std::size_t max_flagged_tickets = 4096;

// The most entries a store lists per room of the places by last check-in window
// (room_counts::active_windows). A room has session / active_window_ms + 1 windows live: about
// 61 while session_duration is at most ten minutes, session / window_ms + 1 above (361 for an
// hour at 10 s windows). Longer sessions are listed by runs of windows (active_run_ms). A list
// up to twice as long (windows of nodes whose clocks run far ahead) is still read; a longer one
// is no store's, and left out.
inline constexpr std::size_t max_active_windows = 256;
inline constexpr std::size_t max_active_windows_read = 2 * max_active_windows;

// The span of one entry of active_windows, labelled by its start: the active window itself, or
// for a session with more live windows than max_active_windows a run of neighbours, on fixed
// boundaries (the same run from one sync to the next). Derived from the limits alone, as
// room.lua's active_run.
inline std::int64_t active_run_ms(const room_limits& l) {
    const std::int64_t window = active_window_ms(l);
    const std::int64_t live = l.session_ms / window + 2;
    // Runs cut at both ends, and windows of nodes whose clocks run ahead: headroom.
    constexpr auto most = static_cast<std::int64_t>(max_active_windows) - 16;
    return window * std::max<std::int64_t>(1, (live + most - 1) / most);
}

// An `admitted` sub-window counts towards the sliding minute while it overlaps (now − span, now].
// Counting the whole oldest sub-window is what makes the bound exact: no span of rate_span_ms
// ever admits more than the limit (the store checks at every grant, see state::room_ledger).
inline bool rate_window_live(std::int64_t start, const room_limits& l, std::int64_t now) {
    return start + l.rate_window_ms > now - l.rate_span_ms;
}

}  // namespace waitroom::room
