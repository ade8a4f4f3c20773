#pragma once
// What the admin listener asks of the rest of the daemon: room status, run-time room changes,
// readiness and the metrics text. gateway::room_admin_backend implements it against the room
// engine and the store; the admin unit only speaks HTTP and JSON, so it is tested with a fake.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "waitroom/metrics/room_history.hpp"

namespace waitroom::admin {

// Cloudflare's status values of a waiting room.
enum class room_queue_status { not_queueing, queueing, event_prequeueing, suspended };
std::string_view to_string(room_queue_status s);

// GET /rooms/{id}/status: Cloudflare's fields, then ours.
struct admin_room_status {
    std::string id;
    room_queue_status status = room_queue_status::not_queueing;
    std::uint32_t event_id = 0;  // 0 = no current or prequeueing event (sent as "")
    std::int64_t estimated_queued_users = 0;
    std::int64_t estimated_total_active_users = 0;
    std::int64_t max_estimated_time_minutes = 0;
    // Ours.
    std::int64_t total_active_users = 0;    // limit in force (event overrides applied)
    std::int64_t new_users_per_minute = 0;  // limit in force
    std::int64_t admitted_this_minute = 0;  // admissions in the sliding minute, all nodes
    std::uint32_t nodes = 0;                // live nodes seen by the store
    bool degraded = false;                  // this node runs without its store
    bool queue_all = false;                 // run-time switch (PATCH) or config
    bool suspended = false;                 // run-time switch (PATCH) or config
};

// The JSON object served for one room (field names as in the struct; `limits` groups the two
// limits; `event_id` is a string, "" when there is none).
nlohmann::json to_json(const admin_room_status& s);

// PATCH /rooms/{id}: the switches the body set; absent fields stay as they are.
struct admin_room_patch {
    std::optional<bool> queue_all;
    std::optional<bool> suspended;
};

enum class admin_patch_result {
    applied,       // 200 with the room's new status
    unknown_room,  // 404
    failed,        // 503: could not be applied (store unreachable…); `message` says why
};

struct admin_patch_outcome {
    admin_patch_result result = admin_patch_result::applied;
    std::string message;                      // failed only
    std::optional<admin_room_status> status;  // applied: the room afterwards (optional)
};

// GET /rooms/{id}/preview: which page of the room to show.
enum class admin_preview_state { queued, event, reject };

enum class admin_preview_result {
    rendered,          // 200 with `html`
    unknown_room,      // 404
    unknown_language,  // 400: `languages` are the ones there are
};

struct admin_preview {
    admin_preview_result result = admin_preview_result::rendered;
    std::string html;                    // rendered only
    std::vector<std::string> languages;  // unknown_language only
};

// GET /rooms/{id}/analytics and /rooms/{id}/analytics.csv: a room's figures by the minute.
struct admin_analytics {
    bool found = false;                     // false: no such room
    std::vector<metrics::minute_row> rows;  // the minutes asked for that are kept, oldest first
};

// An event's span, for the CSV of an event: from its prequeue (or its start) to its end.
struct admin_event_span {
    std::int64_t from_ms = 0;
    std::int64_t to_ms = 0;
};

// GET /origins: one origin server as this node sees it.
struct admin_origin_server {
    std::string url;
    unsigned weight = 1;
    bool healthy = true;              // takes new requests: not ejected, passing its checks
    bool ejected = false;             // out after failures in a row
    bool checks_pass = true;          // its health checks' verdict (true without checks)
    std::int64_t ejected_for_ms = 0;  // left of its ejection
    std::uint64_t ejections = 0;      // since the node started
    std::int64_t requests = 0;        // answered or failed, since the node started
    std::int64_t errors = 0;          // connect failures, timeouts, 5xx
    double response_p50_seconds = 0;  // time to the response head, since the node started
    double response_p90_seconds = 0;  // (0 without answers)
};

// GET /origins: the servers, and whether the rooms admit (some server takes requests).
struct admin_origins {
    bool available = true;
    std::vector<admin_origin_server> servers;
};
nlohmann::json to_json(const admin_origins& o);

struct admin_readiness {
    bool ready = true;
    std::string reason;  // when not ready: "draining", "degraded: store unreachable"…
};

// Called on the admin listener's thread. Nothing may throw; every call but patch_room answers at
// once (it reads snapshots). patch_room may take a store round trip: it calls `done` exactly
// once, from any thread; the listener carries the answer back to its own thread. An `id` is
// valid for the duration of the call only.
class admin_backend {
  public:
    using patch_done = std::function<void(admin_patch_outcome)>;

    virtual ~admin_backend() = default;

    // Every configured room, in config order.
    virtual std::vector<admin_room_status> rooms() = 0;
    // One room; nullopt when there is no such room.
    virtual std::optional<admin_room_status> room_status(std::string_view id) = 0;
    virtual void patch_room(std::string_view id, const admin_room_patch& patch,
                            patch_done done) = 0;
    // The room's page in `state` with sample values, in built-in `language` ("" = the room's
    // own). Reads the templates only: no room state or counter is touched.
    virtual admin_preview preview_page(std::string_view id, admin_preview_state state,
                                       std::string_view language) = 0;
    virtual admin_readiness readiness() = 0;
    // The rows of room `id` whose minute starts in [from_ms, to_ms) (metrics::room_history).
    virtual admin_analytics analytics(std::string_view id, std::int64_t from_ms,
                                      std::int64_t to_ms) = 0;
    // The span of the room's event named `event`; nullopt when the room has none of that name.
    virtual std::optional<admin_event_span> event_span(std::string_view id,
                                                       std::string_view event) = 0;
    // The daemon's clock, unix ms: "the last N minutes" are counted back from it.
    virtual std::int64_t now_ms() = 0;
    // The body of GET /metrics (e.g. metrics::metric_set::text()).
    virtual std::string metrics_text() = 0;
    // The origin's servers and their health.
    virtual admin_origins origins() = 0;
};

}  // namespace waitroom::admin
