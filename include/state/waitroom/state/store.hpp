#pragma once
// The state store interface of DESIGN.md §3–4: once per sync interval a node pushes its counter
// deltas, gets back the aggregated state of every room and a lease of slots; between syncs it may
// ask for a top-up. Every call completes through a handler so a networked store (Redis: one
// round trip per sync, one Lua script) fits behind it; the local store completes inline. It also
// holds the run-time room switches (admin PATCH) so that every node gets them at its next sync.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "waitroom/room/counters.hpp"
#include "waitroom/room/limits.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/state/error.hpp"

namespace waitroom::state {

// What a node sends for one room at a sync.
struct room_report {
    std::string room;
    room::room_limits limits;  // in force at the node now (events applied)
    room::room_deltas deltas;  // counter deltas since the last successful sync (+ slots_used)
    std::int64_t slots_returned = 0;  // unused slots handed back (taken out of the node's pool)
    // The store epoch this node last had answered for the room ("" before any). A store that
    // lost its memory (Redis restarted empty) has another one: it refuses the deltas (they add
    // to counts it no longer has) and takes `live` instead (see room_grant::stale).
    std::string epoch;
    // Everything this node has counted into the room's live windows (admitted, active, waiting),
    // this report's deltas included: what it re-reports to a store that lost its memory.
    room::room_deltas live;
    std::int64_t held = 0;  // leased slots in the node's pool now (the lease a re-report claims)
    bool full = false;      // set by the store: this sync re-reports `live` and `held`
    // The id of a top-up of this room whose answer never came (0: none). The store may have
    // granted it all the same: those slots are in no pool, and the store takes them back.
    std::uint64_t lost_top_up = 0;
    // `held` is exact: the store sets its count of this node's lease to it (after this report's
    // returns) instead of taking slots_used and slots_returned off its own count. Sent by a node
    // leaving degraded mode, which holds nothing of the store's lease then (it hands the lapsed
    // lease back): grants whose answers were lost in the outage stop counting as held.
    bool held_exact = false;
    // The batch this room's report repeats (0: it belongs to the node_report's batch). A room
    // whose outcome is unknown (its script failed, its answer was lost) is sent again as it was
    // under its own batch, beside the other rooms' new reports: the store keeps the last batch
    // it applied per room and node, so a repeat of an applied report counts nothing twice.
    std::uint64_t batch = 0;
};

// One sync of one node: also its heartbeat.
struct node_report {
    std::string node_id;
    std::string datacenter;
    std::int64_t now_ms = 0;
    std::int64_t node_ttl_ms = 3'000;  // the store forgets a node silent this long, and its lease
    std::vector<room_report> rooms;
    // Makes a resent report harmless: the store remembers, per room and node, the batch it last
    // applied and only answers a report carrying that same batch again (a resend after a timeout
    // whose outcome the node could not know). A node numbers its reports upwards from a random
    // start, so a restarted node does not repeat its old ids. 0: no batch, always applied.
    std::uint64_t batch = 0;
};

// A room's run-time switches as the store holds them (admin PATCH, shared by every node). Each
// is unset (the node's config decides), off or on.
struct room_switch_values {
    std::optional<bool> queue_all;
    std::optional<bool> suspended;

    friend bool operator==(const room_switch_values&, const room_switch_values&) = default;
};

// The most admission sub-windows a store's answer lists (room_counts::admitted_windows), the
// newest kept: a networked store's reply is untrusted input, and the room engine walks the list
// at every sync. The sliding minute has rate_span / rate_window + 1 live, 241 at the default
// 250 ms. (The places by check-in window are listed by runs past room::max_active_windows.)
inline constexpr std::size_t max_admitted_windows = 512;
static_assert(room::windowing{}.rate_span_ms / room::windowing{}.rate_window_ms + 1 <=
                  static_cast<std::int64_t>(max_admitted_windows),
              "the sliding minute's live sub-windows fit the bound");
using room::max_active_windows;

// The store's answer for one room.
struct room_grant {
    std::string room;
    room::room_counts counts;      // aggregated over all nodes, after this node's deltas
    std::int64_t granted = 0;      // slots added to this node's lease
    std::int64_t release = 0;      // lease above this node's share: give back at the next sync
    room_switch_values overrides;  // the room's run-time switches now
    std::string epoch;             // the store's epoch for the room (made by its first sync)
    // The report's epoch was not the store's: nothing was applied, send it again with `full`.
    bool stale = false;
    // Queued visitors still counted in waiting windows that lapsed since the store's last sync
    // of the room (visitors who stopped refreshing: abandonments). The store finds each lapsed
    // window once, in whichever node's sync comes first, so the nodes' sums add up exactly.
    std::int64_t abandoned = 0;
    // This room alone failed (errc::room_failed: its script raised an error; or its answer was
    // lost while the other rooms' came): its report may or may not have been applied, and the
    // rest of this grant is empty. The other rooms' grants stand.
    std::error_code ec;
};

// The batch a room's report goes under (room_report::batch).
inline std::uint64_t batch_of(const node_report& n, const room_report& r) {
    return r.batch != 0 ? r.batch : n.batch;
}

struct sync_result {
    std::error_code ec;             // the whole sync failed (the rooms' outcomes are not known)
    std::vector<room_grant> rooms;  // same order as the report's rooms (see room_grant::ec)
};

struct top_up_request {
    std::string node_id;
    std::string datacenter;
    std::string room;
    room::room_limits limits;
    std::int64_t want = 1;
    // The visitors waiting for this call (0: not told). Near the room's limit the store grants
    // no more than this (room_ledger::near_limit): the rest of `want` would sit in this node's
    // pool while another node queued.
    std::int64_t need = 0;
    // This node's visitors who renewed their sessions out of windows the store no longer counts
    // at now_ms, their check-ins not reported yet (room::node_state::unreported_renewals): the
    // store would count their places free, so it counts them as active (not against the rate).
    std::int64_t unreported = 0;
    std::int64_t now_ms = 0;
    // As room_report::epoch: a store with another epoch grants nothing until this node's next
    // sync has re-reported its windows (its counts are missing them).
    std::string epoch;
    // Unique per node (0: none); a later sync names it in room_report::lost_top_up when its
    // answer never came.
    std::uint64_t id = 0;
};

struct top_up_result {
    std::error_code ec;
    std::int64_t granted = 0;
};

// What a write does to one switch: leave it, clear it back to unset, or set it.
enum class switch_write { keep, unset, off, on };
// A PATCH field: absent keeps the switch, a value sets it.
inline switch_write set_or_keep(std::optional<bool> v) {
    return v ? (*v ? switch_write::on : switch_write::off) : switch_write::keep;
}

struct override_write {
    std::string room;
    switch_write queue_all = switch_write::keep;
    switch_write suspended = switch_write::keep;
    // Kept at least this long without syncs (every sync that reports the room renews it with the
    // room's other keys), so the switches of a room nobody runs any more do not pile up.
    std::int64_t keep_ms = 600'000;
};

struct override_result {
    std::error_code ec;
    room_switch_values overrides;  // the room's switches after the write
};

class store {
  public:
    using sync_handler = std::function<void(sync_result)>;
    using top_up_handler = std::function<void(top_up_result)>;
    using override_handler = std::function<void(override_result)>;

    virtual ~store() = default;
    // Applies the deltas and returns state and leases, atomically per room: one room's failure
    // (room_grant::ec) leaves the others' grants standing. The handler runs exactly once, on
    // any thread, possibly inline.
    virtual void sync(node_report report, sync_handler done) = 0;
    // Grants up to `want` more slots if capacity is free, never more than is free.
    virtual void top_up(top_up_request req, top_up_handler done) = 0;
    // Writes a room's run-time switches; every later sync answer of every node carries them.
    // Not pure: a store that keeps none (a test double, the simulator) refuses the write.
    virtual void write_overrides(override_write w, override_handler done) {
        (void)w;
        done(override_result{make_error_code(errc::unavailable), {}});
    }
};

}  // namespace waitroom::state
