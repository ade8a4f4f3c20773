#pragma once
// The state store interface of DESIGN.md §3–4: once per sync interval a node pushes its counter
// deltas, gets back the aggregated state of every room and a lease of slots; between syncs it may
// ask for a top-up. Every call completes through a handler so a networked store (Redis: one
// round trip per sync, one Lua script) fits behind it; the local store completes inline.

#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "waitroom/room/counters.hpp"
#include "waitroom/room/limits.hpp"
#include "waitroom/room/room_state.hpp"

namespace waitroom::state {

// What a node sends for one room at a sync.
struct room_report {
    std::string room;
    room::room_limits limits;  // in force at the node now (events applied)
    room::room_deltas deltas;  // counter deltas since the last successful sync (+ slots_used)
    std::int64_t slots_returned = 0;  // unused slots handed back (taken out of the node's pool)
};

// One sync of one node: also its heartbeat.
struct node_report {
    std::string node_id;
    std::string datacenter;
    std::int64_t now_ms = 0;
    std::int64_t node_ttl_ms = 3'000;  // the store forgets a node silent this long, and its lease
    std::vector<room_report> rooms;
};

// The store's answer for one room.
struct room_grant {
    std::string room;
    room::room_counts counts;  // aggregated over all nodes, after this node's deltas
    std::int64_t granted = 0;  // slots added to this node's lease
    std::int64_t release = 0;  // lease above this node's share: give back at the next sync
};

struct sync_result {
    std::error_code ec;
    std::vector<room_grant> rooms;  // same order as the report's rooms
};

struct top_up_request {
    std::string node_id;
    std::string datacenter;
    std::string room;
    room::room_limits limits;
    std::int64_t want = 1;
    std::int64_t now_ms = 0;
};

struct top_up_result {
    std::error_code ec;
    std::int64_t granted = 0;
};

class store {
  public:
    using sync_handler = std::function<void(sync_result)>;
    using top_up_handler = std::function<void(top_up_result)>;

    virtual ~store() = default;
    // Applies the deltas and returns state and leases, atomically per room. The handler runs
    // exactly once, on any thread, possibly inline.
    virtual void sync(node_report report, sync_handler done) = 0;
    // Grants up to `want` more slots if capacity is free, never more than is free.
    virtual void top_up(top_up_request req, top_up_handler done) = 0;
};

}  // namespace waitroom::state
