#pragma once
// What an admission from the queue says about the room: how long the visitor waited, how far
// the first estimate it was shown was off, and whether it went in before someone who arrived in
// an earlier window. Read from the visitor's cookie and the room state at the admission: the
// gateway keeps nothing per visitor (DESIGN.md §4), so these are all the figures there are.

#include <cstdint>

#include "waitroom/room/payload.hpp"
#include "waitroom/room/room_state.hpp"

namespace waitroom::room {

// The longest wait, or estimate, a cookie is believed about. A cookie is sealed by the room, but
// an old one (or one sealed by a node with a wild clock) may carry anything: a figure beyond
// this is left out of the estimate error rather than skewing it.
inline constexpr std::int64_t max_believed_wait_ms = 7ll * 24 * 3'600'000;

struct queue_admission {
    bool from_queue = false;       // the admitted visitor held a place in the queue
    // Time in the queue: from the first estimate shown (the visitor's first queued answer), or
    // from its arrival window's start for a cookie without one, to the admission.
    std::int64_t waited_ms = 0;
    bool estimated = false;        // the cookie carried a first estimate worth believing
    std::int64_t estimate_ms = 0;  // what that estimate said
    std::int64_t error_ms = 0;     // actual − estimate: > 0 when the wait was longer than told
    // Fairness: a visitor of an older arrival window was still waiting (room state at the
    // admission), so this one went in before someone who arrived earlier.
    bool overtook = false;
};

// The figures of admitting `queued` (a queued visitor's cookie, its place kept) at `now_ms`,
// with `state` the room state the admission was decided on.
queue_admission assess_admission(const payload& queued, const room_state& state,
                                 std::int64_t now_ms);

}  // namespace waitroom::room
