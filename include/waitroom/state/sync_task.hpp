#pragma once
// The node's background sync (DESIGN.md §3): once per interval it collects the workers' deltas,
// pushes them to the store with its heartbeat, publishes the returned room state as a new
// immutable snapshot and adds the granted lease to the node's slot pools. It also runs top-ups.
// It creates no thread: server/ drives run_once (see sync_timer.hpp for an Asio driver).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "waitroom/room/engine.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/state/store.hpp"

namespace waitroom::state {

struct sync_options {
    std::string node_id = "node";       // config node.id
    std::string datacenter = "local";   // config node.datacenter
    std::int64_t interval_ms = 1'000;   // config state.sync_interval
    std::int64_t node_ttl_ms = 3'000;   // the store forgets a node silent this long
    std::int64_t lease_ttl_ms = 2'000;  // the node drops its slots after this long without a
                                        // successful sync (below node_ttl: never both hold them)
    std::int64_t top_up_retry_ms = 0;   // after a top-up granted nothing, none for this long
                                        // (0 for the local store; about interval for Redis)
    std::int64_t top_up_min = 1;        // smallest top-up asked for
};

// The options for a node from its config: node id and datacenter, the sync interval, and TTLs
// scaled to it (a store forgets a node after 3 intervals; the node stops using its lease after
// 2, so the two never both count the same slots).
sync_options make_sync_options(const config::config& cfg);

class sync_task {
  public:
    sync_task(room::node_state& node, store& st, sync_options opt);

    // The rooms and their limits; swapped whole on reload. Any thread.
    void set_engine(std::shared_ptr<const room::engine> e);

    // One sync. `done` runs when the store has answered and the snapshot is published (inline
    // with the local store). A run while another is in flight completes with errc::busy.
    void run_once(std::int64_t now_ms, std::function<void(std::error_code)> done = {});

    // Asks the store for more slots for a room whose pool ran dry (decision wait_for_slots).
    // Concurrent requests for a room share one store call. `done(granted_any)` runs on any
    // thread, possibly inline.
    void top_up(const std::string& room_id, std::int64_t now_ms, std::function<void(bool)> done);

    // No successful sync for longer than the lease TTL.
    bool degraded(std::int64_t now_ms) const;
    std::int64_t last_success_ms() const;
    std::uint64_t syncs() const;
    std::uint64_t top_ups() const;

  private:
    void on_synced(std::int64_t now_ms, std::map<std::string, room::room_limits> limits,
                   std::vector<room_report> sent, sync_result res,
                   std::function<void(std::error_code)> done);

    room::node_state& node_;
    store& store_;
    sync_options opt_;

    mutable std::mutex mu_;
    std::shared_ptr<const room::engine> engine_;
    bool in_flight_ = false;
    std::int64_t last_success_ms_ = 0;
    std::uint64_t syncs_ = 0;
    std::uint64_t top_ups_ = 0;
    std::map<std::string, std::int64_t> pending_release_;  // room → slots to give back
    std::map<std::string, std::int64_t> last_demand_;      // room → demand in the last interval
    std::map<std::string, std::vector<std::function<void(bool)>>> top_up_waiters_;
};

}  // namespace waitroom::state
