#pragma once
// What the admission cookie carries about one visitor: the room engine's record of the visitor,
// which cookie/ seals into `_cfwaitingroom` (as payload). The gateway keeps no per-visitor
// state, so everything the room engine needs to count and order a visitor lives here.

#include <cstdint>
#include <string>

namespace waitroom::room {

struct payload {
    std::uint8_t version = 1;        // format version
    std::string room;                // room id (bound as associated data, not in the ciphertext)
    std::int64_t bucket = 0;         // arrival bucket: unix ms of the start of the arrival window
    std::int64_t accepted_at = 0;    // unix ms when admitted; 0 while waiting
    std::int64_t last_check_in = 0;  // unix ms of the last request that was counted
    std::uint64_t ticket = 0;        // random; orders visitors inside a bucket, drives `random`
    std::uint32_t event_id = 0;      // event the visitor arrived under; 0 = none
    // Bits the room engine owns (e.g. "counted as waiting", "prequeued for the event"); stored
    // as a varint, so small values cost one byte and new bits need no format change.
    std::uint32_t flags = 0;
    // The refresh-rate count of a queued visitor (rooms with abuse_action): its requests since
    // flood_since, a minute at most. 0 / 0 = none counted.
    std::int64_t flood_since = 0;   // unix ms of the first request of the minute counted
    std::uint32_t flood_count = 0;  // requests in that minute, this one included
    // A keyed hash of the visitor's network (cookie.bind: prefix), never the address itself;
    // 0 = not bound.
    std::uint32_t network = 0;
    // The first wait estimate a queued visitor was shown, kept until its admission so that the
    // actual wait is measured from the same instant as the estimate: when it was shown (unix
    // ms; 0 = none shown yet) and what it said (seconds).
    std::int64_t estimate_shown_at = 0;
    std::uint32_t estimate_seconds = 0;

    friend bool operator==(const payload&, const payload&) = default;
};

}  // namespace waitroom::room

namespace waitroom::cookie {

// The codec's name for what it seals.
using payload = room::payload;

}  // namespace waitroom::cookie
