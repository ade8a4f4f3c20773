#include "waitroom/room/analytics.hpp"

#include <algorithm>

namespace waitroom::room {

queue_admission assess_admission(const payload& queued, const room_state& state,
                                 std::int64_t now_ms) {
    queue_admission a;
    a.from_queue = true;
    a.overtook = state.waiting_before(queued.bucket) > 0;
    // Differences of times a cookie carries may be anything: computed without overflow.
    std::int64_t since_shown = 0;
    const bool shown = queued.estimate_shown_at != 0 &&
                       !__builtin_sub_overflow(now_ms, queued.estimate_shown_at, &since_shown) &&
                       since_shown >= 0 && since_shown <= max_believed_wait_ms;
    if (shown) {
        a.waited_ms = since_shown;
        const std::int64_t estimate_ms = std::int64_t{queued.estimate_seconds} * 1000;
        if (estimate_ms <= max_believed_wait_ms) {
            a.estimated = true;
            a.estimate_ms = estimate_ms;
            a.error_ms = since_shown - estimate_ms;
        }
        return a;
    }
    std::int64_t since_bucket = 0;
    if (!__builtin_sub_overflow(now_ms, queued.bucket, &since_bucket)) {
        a.waited_ms = std::clamp<std::int64_t>(since_bucket, 0, max_believed_wait_ms);
    }
    return a;
}

}  // namespace waitroom::room
