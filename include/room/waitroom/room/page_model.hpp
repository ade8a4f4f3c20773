#pragma once
// Every value the queue page, the reject page and the JSON response show, computed by the room
// engine for one decision. Field names are Cloudflare's template variables in snake_case (the
// Cloudflare name is in each comment), so the renderer maps them one to one.

#include <cstdint>
#include <string>
#include <string_view>

namespace waitroom::room {

struct page_model {
    std::string room_name;            // roomName (ours): the room's display name
    bool in_waiting_room = false;     // inWaitingRoom: the visitor is queued (page shown)
    std::int64_t queue_position = 0;  // queuePosition (ours): estimated users ahead

    bool wait_time_known = false;      // waitTimeKnown: the wait estimate below is meaningful
    std::int64_t wait_time = 0;        // waitTime: estimated wait, whole minutes (nearest, ≥ 1)
    std::string wait_time_formatted;   // waitTimeFormatted: e.g. "1 hour 5 minutes" (en)
    std::int64_t wait_time_hours = 0;  // waitTimeHours: whole hours of waitTime
    std::int64_t wait_time_hour_minutes = 0;   // waitTimeHourMinutes: waitTime minus its hours
    std::int64_t wait_time_25_percentile = 0;  // waitTime25Percentile: minutes (random: spread)
    std::int64_t wait_time_50_percentile = 0;  // waitTime50Percentile: minutes
    std::int64_t wait_time_75_percentile = 0;  // waitTime75Percentile: minutes
    // waitTimeSeconds (ours): the same estimate as waitTime to the nearest 10 s (≥ 10), for
    // short waits that whole minutes round by a third.
    std::int64_t wait_time_seconds = 0;

    bool queue_is_full = false;  // queueIsFull: the room is at its limits (visitors are queued)
    bool queue_all = false;      // queueAll: the room queues everyone (queue_all or prequeue)
    // originUnavailable (ours): no origin server is healthy, so nobody new is let in for now.
    bool origin_unavailable = false;

    // lastUpdated: the instant of the room state used, unix ms; pages and JSON write it as ISO
    // 8601 UTC when they render (a cache miss), so a queued answer formats no date and
    // allocates no string for it.
    std::int64_t last_updated_ms = 0;
    std::int64_t refresh_interval_seconds = 20;  // refreshIntervalSeconds: per-visitor, adaptive

    std::string_view queueing_method = "fifo";  // queueingMethod: fifo|random|passthrough|reject
    bool is_fifo_queue = true;                  // isFIFOQueue
    bool is_random_queue = false;               // isRandomQueue
    bool is_passthrough_queue = false;          // isPassthroughQueue
    bool is_reject_queue = false;               // isRejectQueue

    bool is_event_active = false;             // isEventActive: an event is running now
    bool is_event_prequeueing = false;        // isEventPrequeueing: in the event's prequeue phase
    std::int64_t time_until_event_start = 0;  // timeUntilEventStart: minutes (0 when none)
    std::string time_until_event_start_formatted;  // timeUntilEventStartFormatted
    std::int64_t time_until_event_end = 0;         // timeUntilEventEnd: minutes (0 when none)
    std::string time_until_event_end_formatted;    // timeUntilEventEndFormatted
    bool shuffle_at_event_start = false;           // shuffleAtEventStart

    // Proof of work on joining (ours): the visitor joins the queue once it sends a solution.
    bool challenge_required = false;    // challengeRequired
    unsigned challenge_difficulty = 0;  // challengeDifficulty: leading zero bits asked
    // The seed is the visitor's own (bound to its cookie), so it is never in the model: the
    // gateway sends it beside the page (cookie::challenge_cookie_name, a response header).
};

// "1 hour 5 minutes", "3 minutes", "1 minute", "0 minutes": English, as Cloudflare's default.
std::string format_minutes(std::int64_t minutes);

}  // namespace waitroom::room
