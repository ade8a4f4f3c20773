#pragma once
// The node's background sync (DESIGN.md §3): once per interval it collects the workers' deltas,
// pushes them to the store with its heartbeat, publishes the returned room state as a new
// immutable snapshot and adds the granted lease to the node's slot pools. It also runs top-ups.
// It creates no thread: server/ drives run_once (see sync_timer.hpp for an Asio driver).
// When the store stays unreachable past the lease TTL it runs the degraded mode of DESIGN.md §4:
// each room's pool is refilled from a small local allowance instead of a lease.
// One class, three source files by job: the sync (sync_task.cpp), top-ups (sync_top_up.cpp) and
// degraded mode (sync_degraded.cpp); the sections below follow them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
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
                                        // (make_sync_options: interval / 4, any store)
    std::int64_t top_up_min = 1;        // smallest top-up asked for (later top-ups before the
                                        // next sync ask for twice the previous one)
    bool degraded_allowance = true;     // degraded mode admits from a local allowance (false:
                                        // it admits nobody new until the store returns)
};

// What degraded mode allows one room on this node, for metrics, logs and tests.
struct degraded_room_info {
    bool active = false;        // the room admits from an allowance right now
    double share = 0;           // this node's share of the limits (1 / last known live nodes)
    std::int64_t budget = 0;    // most new admissions this episode may still add to the pool
    std::int64_t granted = 0;   // allowance slots put into the pool this episode
    std::int64_t returned = 0;  // lapsed lease slots handed back when the store returns
};

// The options for a node from its config: node id and datacenter, the sync interval, and TTLs
// scaled to it (a store forgets a node after 3 intervals; the node stops using its lease after
// 2, so the two never both count the same slots).
sync_options make_sync_options(const config::config& cfg);

class sync_task {
  public:
    sync_task(room::node_state& node, store& st, sync_options opt);

    // --- The sync (sync_task.cpp) -------------------------------------------------------------

    // The rooms and their limits: a fixed engine, or a source asked at every sync and top-up
    // (the node's published runtime, so that a reload is one switch for the sync too). Set it
    // before the first sync; a source is called under the task's lock and must not block.
    using engine_source = std::function<std::shared_ptr<const room::engine>()>;
    void set_engine(std::shared_ptr<const room::engine> e);
    void follow_engine(engine_source source);
    // The node's run-time room switches: each successful sync sets them to what the store holds
    // (admin PATCH on any node), so every node converges within one interval. Null: left alone.
    void set_overrides(std::shared_ptr<room::room_overrides> o);

    // One sync. `done` runs when the store has answered and the snapshot is published (inline
    // with the local store). A run while another is in flight completes with errc::busy.
    void run_once(std::int64_t now_ms, std::function<void(std::error_code)> done = {});

    std::int64_t last_success_ms() const;
    std::uint64_t syncs() const;
    // Queued visitors of a room whose waiting windows lapsed while they were still counted in
    // them (they stopped refreshing), as the store reported them to this node's syncs over the
    // node's life: each lapsed window reaches one node, so the nodes' figures add up.
    std::uint64_t abandoned(const std::string& room_id) const;
    // Syncs in which the store failed this room alone (room_grant::ec: its script raised an
    // error, as on a clobbered key) while it answered the others, over the node's life. Such a
    // room is resent under its batch at every sync until the store applies it; past the lease
    // TTL it admits from its own degraded allowance meanwhile, and the other rooms sync on.
    std::uint64_t room_failures(const std::string& room_id) const;
    // The store failed this room alone at the last sync that reached it.
    bool failing_alone(const std::string& room_id) const;
    // Called when a room starts failing alone (true, with the store's error) and when a sync
    // settles it again (false): once each way, for server/'s log line. On the thread that
    // completes the sync, never under a lock of this class.
    void on_room_failing(
        std::function<void(const std::string& room, bool failing, std::error_code ec)> f);
    // Called after every sync that reached the store, answered or failed (not one refused as
    // busy), with its round trip on the steady clock, on the thread that completes it and never
    // under a lock of this class. state/ sees no metrics: server/ feeds the histogram here.
    void on_sync_complete(std::function<void(std::chrono::nanoseconds took, std::error_code ec)> f);

    // --- Top-ups (sync_top_up.cpp) ------------------------------------------------------------

    // Asks the store for more slots for a room whose pool ran dry (decision wait_for_slots).
    // Concurrent requests for a room share one store call; when they outnumber the slots it got
    // and the store gave all it was asked, it asks again before answering them. The ask is the
    // last interval's demand, doubling with each top-up until the next sync.
    // `done(pool_has_slots)` runs on any thread, possibly inline.
    void top_up(const std::string& room_id, std::int64_t now_ms, std::function<void(bool)> done);
    // Top-ups of lapsed leases that wait for the sync in flight, at most; past it one answers
    // "nothing" at once (a store that never answered must not let every request pile up).
    static constexpr std::size_t max_after_flight = 4096;

    std::uint64_t top_ups() const;
    // Top-ups asked of the store for one room over the node's life (0 for an unknown room).
    std::uint64_t top_ups(const std::string& room_id) const;

    // --- Degraded mode (sync_degraded.cpp) ----------------------------------------------------

    // No sync has succeeded for longer than the lease TTL, and the store failed the last one or
    // has kept one in flight for longer than that TTL (a store that hangs, or answers too slowly
    // for the lease it renews). A sync that is only late (the timer held back on a loaded
    // machine) is not: nothing says the store is unreachable, and /readyz stays ready.
    bool degraded(std::int64_t now_ms) const;
    // Degraded mode (DESIGN.md §4). An episode starts at the first failed sync past the lease
    // TTL and ends with the next successful sync. Meanwhile each failed sync refills a room's
    // pool from an allowance: share = 1 / live nodes in the last known state; within a sliding
    // minute of its own (the node's own admissions count until they age out, its share of the
    // other nodes' in the last known minute until they do, by sub-window, and of the slots
    // leased then all episode), its allowance admissions in any minute at most
    // share × new_users_per_minute; at most share × (total_active_users − last known active) −
    // own admissions since that state, for the whole episode (room_ledger reserves exactly
    // these bounds for a node not back yet). A room never synced gets nothing. Admitted
    // visitors never need a slot, so they keep passing.
    // degraded_since_ms: 0 = not degraded.
    std::int64_t degraded_since_ms() const;
    // Syncs that failed, in total and since the last success (for the metric and /readyz).
    std::uint64_t failed_syncs() const;
    std::uint64_t consecutive_failures() const;
    std::uint64_t degraded_episodes() const;
    // Allowance slots handed out to visitors over the node's life (admissions made degraded).
    std::uint64_t degraded_admissions() const;
    degraded_room_info degraded_room(const std::string& room_id) const;
    // Called once on entering degraded mode (true) and once on leaving it (false), with the
    // sync's time, on the thread that completes the sync; never under a lock of this class.
    // server/ logs its one warning and flips /readyz here.
    void on_degraded_change(std::function<void(bool degraded, std::int64_t now_ms)> f);

  private:
    room::node_state& node_;
    store& store_;
    sync_options opt_;

    mutable std::mutex mu_;

    // --- The sync -----------------------------------------------------------------------------

    // What a report changed that a failure must undo.
    struct adjust {
        std::int64_t allowance_left = 0;  // degraded: allowance taken out of the pool by it
        std::int64_t slots_used = 0;      // its slots_used, added to uses_reported_ once applied
        bool in_episode = false;
        bool removed = false;  // a resend of a room a reload removed: not kept if it fails again
    };
    // A room's report of unknown outcome (its sync timed out, or the store failed this room
    // alone): the store may or may not have applied it. Merged into the next batch it would
    // count twice if it had; kept as it was and sent again under its own batch (`sent.batch`),
    // the store answers the repeat without counting it (node_report::batch). The room's new
    // deltas wait in the node meanwhile; the other rooms' reports go on as usual.
    struct unknown_room {
        room_report sent;
        adjust adj;
        room::room_limits limits;
    };

    void on_synced(std::int64_t now_ms, std::map<std::string, room::room_limits> limits,
                   std::vector<room_report> sent, std::vector<adjust> adj, sync_result res,
                   std::function<void(std::error_code)> done);

    engine_source engine_;
    std::shared_ptr<room::room_overrides> overrides_;
    std::uint64_t overrides_seen_ = 0;  // overrides_->writes() when the sync in flight left
    bool in_flight_ = false;
    std::int64_t in_flight_since_ms_ = 0;  // when the sync in flight started
    std::uint64_t next_batch_;             // the next report's id (random start, see store.hpp)
    std::uint64_t in_flight_batch_ = 0;    // the id of the report in flight
    std::map<std::string, unknown_room> unknown_;  // room → sent again before any new report
    std::int64_t last_success_ms_ = 0;
    // room → the last sync that settled it (its report applied and answered); a room the store
    // fails alone falls behind the node's last_success_ms_.
    std::map<std::string, std::int64_t> settled_ms_;
    std::map<std::string, std::uint64_t> room_failures_;  // room → syncs that failed it alone
    std::set<std::string> failing_;  // rooms failed alone by their last answered sync
    // room → the admissions that wait in the node while the room's report of unknown outcome
    // goes again (as of the sync in flight): its own, not in the last state the store gave, so a
    // degraded episode of the room alone reckons with them.
    std::map<std::string, room::delta_map<std::int64_t>> held_back_;
    std::function<void(const std::string&, bool, std::error_code)> on_room_failing_;
    std::uint64_t syncs_ = 0;
    std::map<std::string, std::int64_t> pending_release_;  // room → slots to give back
    // room → slots top-ups added since the last report: the rest of the pool sat unused through
    // the interval, and the next report hands it back.
    std::map<std::string, std::int64_t> topped_up_;
    std::map<std::string, std::uint64_t> abandoned_by_room_;  // room → abandonments (metric)
    // What the store holds of this node, per room: its epoch and the node's live windows as
    // applied there (every applied delta summed, dead windows dropped: a few dozen entries).
    // A store that lost its memory answers with another epoch, and these go to it again.
    std::map<std::string, std::string> epochs_;
    std::map<std::string, room::room_deltas> reported_;
    // room → the slot uses (slots_used) of every report the store applied: the pool's taken()
    // less this is what the node used and has not reported, which a report that sets the
    // store's count of its held slots (held_exact, full) counts as held.
    std::map<std::string, std::int64_t> uses_reported_;
    // The revoked sessions of each room this node knows: the store's last list and the node's
    // own revocations (with the window each named), each kept from when the node first knew of
    // it for as long as the store keeps it (room::revocation_live), at most
    // room::max_revoked_sessions. A re-report sends them all, since a store that lost its memory
    // lost them too, and the node's snapshot refuses them all while the store refills.
    struct known_revocation {
        std::int64_t window = -1;  // the active window the node's own revocation named, or -1
        std::int64_t since = 0;    // window in which this node first knew of it
    };
    std::map<std::string, std::map<std::uint64_t, known_revocation>> revoked_;
    // The tickets refused by a flag (abuse_action) of each room this node knows, kept alike: the
    // store's last list and the node's own flags, each for as long as the store keeps it, at
    // most room::max_flagged_tickets, and all sent again with a re-report.
    struct known_flag {
        std::int64_t since = 0;  // window in which this node first knew of it
    };
    std::map<std::string, std::map<std::uint64_t, known_flag>> flagged_;
    std::function<void(std::chrono::nanoseconds, std::error_code)> on_sync_complete_;

    // --- Top-ups ------------------------------------------------------------------------------

    // One top-up call; asks again while its waiters outnumber the slots it got.
    void ask_store(top_up_request req);
    // A top-up in a room whose lease lapsed: a sync renews it, then the top-up follows. A sync
    // already in flight is waited for once (`waited`), not taken for an empty store.
    void renew_then_top_up(const std::string& room_id, std::int64_t now_ms,
                           std::function<void(bool)> done, bool waited);
    // After the sync a top-up waited for: tops up, or answers, as the renewed lease allows.
    void after_renewal(const std::string& room_id, std::int64_t now_ms,
                       std::function<void(bool)> done);
    // Top-ups parked on the sync in flight: taken when it ends (with in_flight_ = false), run
    // after its `done`.
    std::vector<std::function<void()>> after_flight_;

    std::uint64_t top_ups_ = 0;
    std::map<std::string, std::int64_t> last_demand_;   // room → demand in the last interval
    std::map<std::string, std::int64_t> top_up_asked_;  // room → last top-up asked since sync
    std::uint64_t next_top_up_;                         // the next top-up's id (as batches)
    // room → a top-up whose answer never came. The store may have granted it: the next report
    // of the room names it so that the store takes those slots back, and until that report is
    // answered the room asks for no more (the store remembers one top-up per node and room).
    std::map<std::string, std::uint64_t> lost_top_ups_;
    std::map<std::string, std::vector<std::function<void(bool)>>> top_up_waiters_;
    std::map<std::string, std::uint64_t> top_ups_by_room_;  // room → top-ups asked (metric)

    // --- Degraded mode ------------------------------------------------------------------------

    // One room's degraded episode. The pool holds only allowance slots during it: the lapsed
    // lease is taken out at the start and handed back to the store when it returns.
    struct episode {
        double share = 1;
        // The rate limit is a sliding minute, so the allowance is one too: this node's own
        // admissions still in the minute (before the episode, by the sub-window they fell in;
        // during it, the slots that left the pool, dated by the sync after the refill that saw
        // them go) plus what the pool holds, plus the others' part, stay within
        // share × new_users_per_minute. The others' part is share × (the last known minute's
        // admissions still in it + the slots leased then) − this node's own part of them:
        // summed over the nodes never below 0, so the nodes together stay within the limit
        // (see refill). Everything leaves as it ages out, but the leased slots.
        std::map<std::int64_t, std::int64_t> known;      // rate sub-window → the room's
        std::map<std::int64_t, std::int64_t> own_known;  // rate sub-window → this node's part
        std::int64_t leased = 0;                         // slots leased then
        std::map<std::int64_t, std::int64_t> pre;  // rate sub-window → own admissions before
        std::map<std::int64_t, std::int64_t> own;  // rate sub-window → allowance admissions
        std::int64_t pending = 0;       // allowance admissions not dated yet (see refill)
        std::int64_t entry_window = 0;  // the rate sub-window the episode began in
        std::int64_t pool_after = 0;    // pool size after the last refill
        std::int64_t budget = 0;        // allowance still allowed this episode (active limit)
        std::int64_t known_active = 0;  // the room's active visitors in the last known state
        std::int64_t own_before = 0;    // own admissions since that state, before the episode
        std::int64_t granted = 0;       // allowance put into the pool
        std::int64_t lapsed = 0;        // lease slots taken out of the pool at the start
    };

    // Counts a failed sync; past the lease TTL, starts or continues the episode and refills.
    // `alone`: these rooms failed alone, each past the lease TTL since it was last settled, in a
    // sync that settled others: their episodes only, nothing counted for the node.
    void on_failed(std::int64_t now_ms, const std::vector<room_report>& sent, bool alone = false);
    void refill(const std::string& room_id, episode& ep, const room::room_limits& limits,
                std::int64_t now_ms);
    // Ends the episode at a successful sync: drops the allowance left in the pools (the
    // report counted the admissions it did not carry as held). `sent` holds the rooms the sync
    // settled; the episodes of rooms in `failing` (the store failed them alone) go on, as does
    // that of a settled room whose report was built before its episode began (a resend): its
    // next report ends it. Takes the lock; true if the node was degraded.
    bool end_episodes(const std::vector<room_report>& sent, const std::vector<adjust>& adj,
                      const std::vector<room_report>& failing);
    void notify(bool degraded, std::int64_t now_ms);

    std::int64_t degraded_since_ms_ = 0;
    std::uint64_t failed_syncs_ = 0;
    std::uint64_t consecutive_failures_ = 0;
    std::uint64_t episodes_ = 0;
    std::uint64_t degraded_admissions_ = 0;
    std::map<std::string, episode> episodes_by_room_;
    std::function<void(bool, std::int64_t)> on_degraded_change_;
};

}  // namespace waitroom::state
