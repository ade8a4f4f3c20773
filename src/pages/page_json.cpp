// The queue state as JSON, `{"cfWaitingRoom": {...}}`, for clients that ask for it (DESIGN.md §2).
#include "waitroom/pages/page_renderer.hpp"

#include <nlohmann/json.hpp>

#include "waitroom/util/clock.hpp"

namespace waitroom::pages {

std::string render_json(const room::page_model& m) {
    nlohmann::ordered_json o;
    o["inWaitingRoom"] = m.in_waiting_room;
    o["waitTimeKnown"] = m.wait_time_known;
    o["waitTime"] = m.wait_time;
    o["waitTimeFormatted"] = m.wait_time_formatted;
    o["waitTimeHours"] = m.wait_time_hours;
    o["waitTimeHourMinutes"] = m.wait_time_hour_minutes;
    o["waitTime25Percentile"] = m.wait_time_25_percentile;
    o["waitTime50Percentile"] = m.wait_time_50_percentile;
    o["waitTime75Percentile"] = m.wait_time_75_percentile;
    o["queueIsFull"] = m.queue_is_full;
    o["queueAll"] = m.queue_all;
    o["lastUpdated"] = util::iso8601_utc(m.last_updated_ms);
    o["refreshIntervalSeconds"] = m.refresh_interval_seconds;
    o["queueingMethod"] = std::string(m.queueing_method);
    o["isFIFOQueue"] = m.is_fifo_queue;
    o["isRandomQueue"] = m.is_random_queue;
    o["isPassthroughQueue"] = m.is_passthrough_queue;
    o["isRejectQueue"] = m.is_reject_queue;
    o["isEventActive"] = m.is_event_active;
    o["isEventPrequeueing"] = m.is_event_prequeueing;
    o["timeUntilEventStart"] = m.time_until_event_start;
    o["timeUntilEventStartFormatted"] = m.time_until_event_start_formatted;
    o["timeUntilEventEnd"] = m.time_until_event_end;
    o["timeUntilEventEndFormatted"] = m.time_until_event_end_formatted;
    o["shuffleAtEventStart"] = m.shuffle_at_event_start;
    o["queuePosition"] = m.queue_position;
    o["roomName"] = m.room_name;
    o["waitTimeSeconds"] = m.wait_time_seconds;
    if (m.origin_unavailable) {
        o["originUnavailable"] = true;
    }
    if (m.challenge_required) {
        o["challengeRequired"] = true;
        o["challengeDifficulty"] = m.challenge_difficulty;
    }
    nlohmann::ordered_json root;
    root["cfWaitingRoom"] = std::move(o);
    // `replace`: a room name with invalid UTF-8 must not throw on the request path.
    return root.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace waitroom::pages
