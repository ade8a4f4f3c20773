#pragma once
// A room's analytics by the minute, kept in memory for the CSV download of the dashboard: one row
// per minute for the last day at most, however many visitors or requests there are. Rows are
// made from readings of the room's cumulative figures (its counters and histograms), taken off
// the request path (after each sync, and at each scrape): a row holds what changed in its minute.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/metrics/metrics.hpp"

namespace waitroom::metrics {

// The cumulative figures of one room at one instant.
struct room_reading {
    std::int64_t admitted = 0;
    std::int64_t admitted_from_queue = 0;
    std::int64_t admitted_out_of_order = 0;
    std::int64_t queued = 0;
    std::int64_t abandoned = 0;
    std::int64_t revoked = 0;
    std::int64_t flagged = 0;
    histogram_reading queue_wait;
    histogram_reading estimate_error;
    histogram_reading session_duration;
    // Gauges, as they stand (not summed over the minute).
    std::int64_t active_users = 0;
    std::int64_t queued_users = 0;
};

// Reads a room's handles (queue length and active users are the caller's: they come from the
// room state, not from a handle).
room_reading read_room(const room_metrics& m);

// One minute of a room (or the minute under way): what the counters and histograms gained in
// the minute, and the gauges at its last reading.
struct minute_row : room_reading {
    std::int64_t minute_ms = 0;  // start of the minute, unix ms
};

// The figures a dashboard or a CSV shows of some rows (NaN where there is nothing to show).
struct row_summary {
    double queue_wait_p50 = 0;  // seconds
    double queue_wait_p90 = 0;
    double estimate_error_median = 0;  // seconds; > 0: waits longer than told
    double estimate_error_bias = 0;    // mean error, seconds
    std::int64_t estimates_compared = 0;
    double session_p50 = 0;    // seconds
    double out_of_order_share = 0;  // share of admissions from the queue that overtook someone
};
row_summary summarize(const minute_row& r);
// The rows added up (counts and histograms; the gauges of the last one).
minute_row combine(const std::vector<minute_row>& rows);

class room_history {
  public:
    static constexpr std::size_t default_rows = 24 * 60;

    explicit room_history(std::size_t max_rows = default_rows);

    // A reading of the room at `now_ms`: what changed since the previous one goes into now's
    // minute. The first reading only sets the baseline. A clock that goes back starts over from
    // a new baseline (rows never overlap).
    void record(std::int64_t now_ms, room_reading cumulative);

    // The rows whose minute starts in [from_ms, to_ms), oldest first, the minute under way
    // included.
    std::vector<minute_row> rows(std::int64_t from_ms, std::int64_t to_ms) const;
    std::size_t size() const { return rows_.size(); }

  private:
    std::size_t max_rows_;
    bool started_ = false;
    std::int64_t last_ms_ = 0;
    room_reading last_;  // the previous reading
    std::deque<minute_row> rows_;  // the last is the minute under way
};

// The CSV of some rows of a room (RFC 4180, a header line, times in ISO 8601 UTC).
std::string to_csv(std::string_view room, const std::vector<minute_row>& rows);

}  // namespace waitroom::metrics
