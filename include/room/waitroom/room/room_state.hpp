#pragma once
// What a node knows about its rooms between syncs: the aggregated counters returned by the store
// (room_counts), the immutable snapshot built from them that workers read without locks
// (state_snapshot), the node's leased slots (slot_pool) and the inbox of worker deltas. One
// node_state per process, shared by every worker and the sync task.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "waitroom/room/counters.hpp"
#include "waitroom/room/free_schedule.hpp"
#include "waitroom/room/limits.hpp"

namespace waitroom::room {

// Nodes seen by the store in one datacenter (heartbeats).
struct datacenter_nodes {
    std::string datacenter;
    std::uint32_t nodes = 0;
};

// The aggregated state of one room across all nodes, as the store returns it at a sync.
struct room_counts {
    std::int64_t as_of_ms = 0;              // store time of the aggregation
    std::int64_t active = 0;                // admitted visitors holding a session
    std::int64_t admitted_last_minute = 0;  // new admissions in the sliding minute
    std::int64_t held = 0;                  // slots leased to nodes and not yet reported used
    // The sliding minute's admissions by rate sub-window (start, admissions), ascending: when
    // each leaves the minute (degraded mode admits as they do). Empty from an older store.
    std::vector<std::pair<std::int64_t, std::int64_t>> admitted_windows;
    // The places held by their visitor's last check-in window (start, visitors), ascending: when
    // each frees if its visitor does not come back. Empty from an older store.
    std::vector<std::pair<std::int64_t, std::int64_t>> active_windows;
    std::vector<std::pair<std::int64_t, std::int64_t>> waiting;  // (bucket, queued) ascending
    std::vector<datacenter_nodes> datacenters;                   // live nodes
    std::vector<std::uint64_t> revoked;  // tickets of revoked sessions still refused, ascending
    // Tickets refused by a flag (abuse_action) on any node, still refused, ascending.
    std::vector<std::uint64_t> flagged;
};

// One room in a snapshot: the counts plus what the decision needs precomputed.
class room_state {
  public:
    room_state() = default;
    room_state(room_counts counts, const room_limits& limits);

    const room_counts& counts() const { return counts_; }
    bool known() const { return known_; }  // false: no sync has covered this room yet
    // Capacity not yet used: min(total_active_users − active, new_users_per_minute − admitted
    // in the last minute), ≥ 0. Includes slots leased to nodes but not used yet.
    std::int64_t free_capacity() const { return free_; }
    std::int64_t waiting_total() const { return waiting_total_; }
    // Queued visitors in buckets strictly older than `bucket`.
    std::int64_t waiting_before(std::int64_t bucket) const;
    // A flag (abuse_action, on any node) refused `ticket`: its cookies hold no place.
    bool flagged(std::uint64_t ticket) const {
        return !counts_.flagged.empty() &&
               std::binary_search(counts_.flagged.begin(), counts_.flagged.end(), ticket);
    }
    // Queued visitors in `bucket` itself.
    std::int64_t waiting_in(std::int64_t bucket) const;
    std::uint32_t nodes() const;
    // The session of `ticket` was revoked by the origin (on any node): its cookies admit no more.
    bool revoked(std::uint64_t ticket) const {
        return !counts_.revoked.empty() &&
               std::binary_search(counts_.revoked.begin(), counts_.revoked.end(), ticket);
    }
    // Share of the queue behind the admission front that gives up per minute, followed across
    // snapshots (0 = nobody leaves). Until the room first measures it, a prior
    // (rules::prior_abandon_per_minute) that fades over a session of queueing: a queue too
    // small to measure (fewer than 20 a minute behind the front) whose visitors waited that
    // long without a measure is not told the prior for ever. A measure lasts while its queue
    // does and samples it: a queue that empties and begins again, or goes a session without a
    // sample, starts from the prior again. The wait estimate discounts the visitors ahead who
    // will leave before their turn: counting them all told the queue 25% too long.
    double abandon_per_minute() const { return abandon_per_minute_; }
    // False while abandon_per_minute() is the prior: nothing measured yet.
    bool abandon_measured() const { return abandon_measured_; }
    // The least share of the queue ahead that the prior lets stay until its turn: e^(−h), what
    // a minute of it takes, so no more than about a sixth of the queue gives up however long
    // the wait or the session. Taken as lasting, it told a first answer of an hour's wait 13
    // minutes; over a session of it (which it fades over), a room of 5-minute sessions could be
    // told 37 % of a long wait, one of 15-minute sessions 5 %. A sixth is what the prior was
    // centred on, between a crowd that stays and one of which 30 % give up (issue 16). 0 while
    // abandonment is measured: the measure decides.
    double prior_share_staying() const;
    // Capacity has been free in every snapshot of the last `span_ms` while nobody queued ahead
    // of `bucket` was admitted or left: the visitors ahead are not taking it (late, or gone and
    // still counted). False until the snapshots followed cover that span. The admission front
    // holds a freed place for the buckets ahead this long before a later bucket may take it.
    bool free_unclaimed_for(std::int64_t bucket, std::int64_t span_ms) const;
    // Admissions per minute the room's turnover gives, learned from the sliding minute's
    // admissions once a whole minute of them came after places could first free (see
    // turnover_from_ms), and averaged from the prior over about a session (a minute at the rate
    // limit is taken as it is); 0 while not learned.
    double turnover_per_minute() const { return turnover_per_minute_; }
    // Store time since which the room has had visitors waiting; 0 = nobody waits.
    std::int64_t queueing_since_ms() const { return queueing_since_ms_; }
    // Store time from which the room's admissions measure its turnover: when it started
    // queueing, or a session after that if it had just filled (nobody admitted lately can free
    // a place sooner, so a minute that ends before then measures no turnover); 0 = nobody waits.
    std::int64_t turnover_from_ms() const { return turnover_from_ms_; }
    // When the room's places will free, from its admissions and the session ends seen since
    // (the wait estimate; from the prior's holds before a place has been seen to free).
    const free_schedule& frees() const { return frees_; }
    // Carries the estimates over from the room's previous snapshot and moves them towards what
    // the room saw in between: the queue's departures, the turnover, how long capacity stayed
    // free (sync task, before publishing).
    void follow(const room_state& previous, std::int64_t window_ms);
    // The node's slot_pool::reported_behind() for this room when the state was first published
    // (a state carried into later snapshots unchanged, while its room fails alone at the
    // store, keeps its mark: its free capacity is as old as the mark).
    std::int64_t taken_behind_mark() const { return std::max<std::int64_t>(0, taken_behind_mark_); }

  private:
    friend class node_state;  // sets taken_behind_mark_ at publish
    room_counts counts_;
    bool known_ = false;
    std::int64_t free_ = 0;
    std::int64_t waiting_total_ = 0;
    std::vector<std::int64_t> prefix_;  // prefix_[i] = queued in buckets [0, i)
    double abandon_per_minute_ = 0;
    bool abandon_measured_ = false;  // false: abandon_per_minute_ is the prior, per snapshot
    std::int64_t abandon_measured_at_ms_ = 0;  // the snapshot of the last sample
    double prior_abandon_per_minute() const;   // faded by the queueing so far
    // A session, at least a minute: the span the abandonment prior fades over and the turnover
    // is averaged over.
    double fade_ms() const;
    double turnover_per_minute_ = 0;
    std::int64_t queueing_since_ms_ = 0;
    std::int64_t turnover_from_ms_ = 0;
    std::int64_t session_ms_ = 0;
    std::int64_t rate_limit_ = 0;  // new_users_per_minute
    double prior_turnover_ = 0;    // per minute, what the room assumes before it has seen any
    free_schedule::limits schedule_limits_;
    free_schedule frees_;
    std::int64_t taken_behind_mark_ = -1;  // -1: not published yet
    // The snapshots followed lately, oldest first: when, the capacity free then, and the
    // queue then as (bucket, queued in it and every older bucket), ascending, so that the
    // decision finds the count ahead of a bucket by a binary search.
    struct seen {
        std::int64_t as_of_ms = 0;
        std::int64_t free = 0;
        std::vector<std::pair<std::int64_t, std::int64_t>> queued_up_to;
    };
    std::vector<seen> seen_;
};

// Every room of the node at one instant. Immutable once published.
struct state_snapshot {
    std::uint64_t version = 0;
    std::int64_t as_of_ms = 0;
    std::unordered_map<std::string, room_state> rooms;

    const room_state* find(const std::string& room_id) const;
};

// The slots this node holds for one room (its lease plus top-ups). Shared by all workers of
// the node: taking a slot is one compare-and-swap, so uneven traffic between workers never
// strands slots on an idle worker.
class slot_pool {
  public:
    // Takes one slot unless the pool is empty or its lease expired (the store forgets a lease
    // it has not heard about for a while; the node must stop using it first).
    bool try_take(std::int64_t now_ms);
    void add(std::int64_t n);
    // The lease is good until `until_ms`; renewed by every successful sync and top-up.
    void extend_until(std::int64_t until_ms) {
        expires_at_.store(until_ms, std::memory_order_release);
    }
    bool expired(std::int64_t now_ms) const {
        return now_ms >= expires_at_.load(std::memory_order_acquire);
    }
    // Takes up to n slots back (for returns to the store and lease expiry); returns how many.
    std::int64_t take_up_to(std::int64_t n);
    std::int64_t available() const { return available_.load(std::memory_order_acquire); }
    // Slots taken by visitors with others queued ahead of them (a later arrival bucket through
    // the admission front), over the pool's life. Those the store's counts do not hold yet are
    // capacity a snapshot still shows free, and the visitors ahead still need (engine, the
    // front).
    std::int64_t taken_behind() const { return taken_behind_.load(std::memory_order_relaxed); }
    void note_taken_behind() { taken_behind_.fetch_add(1, std::memory_order_relaxed); }
    // Of those, the ones in reports the store has answered (room_deltas::taken_behind, added by
    // the sync task before it publishes the answer): the counts it published hold them. An
    // admission still in a worker's deltas, or waiting in the node for a resend, is not in them,
    // and its place shows free in the snapshot. Those in the deltas of a room a reload removed
    // count too: no answer will hold them. The room, added back, shows their places free until
    // their visitors' next check-in counts them again, instead of keeping them off its free
    // capacity for the life of the process.
    std::int64_t reported_behind() const {
        return reported_behind_.load(std::memory_order_relaxed);
    }
    void note_reported_behind(std::int64_t n) {
        reported_behind_.fetch_add(n, std::memory_order_relaxed);
    }
    // Slots taken by try_take over the pool's life: the sync task tells the store how many of
    // them it has not reported yet.
    std::int64_t taken() const { return taken_.load(std::memory_order_acquire); }
    // A top-up that granted nothing stops further top-ups until `until_ms` (store load bound).
    bool top_up_allowed(std::int64_t now_ms) const {
        return now_ms >= no_top_up_until_.load(std::memory_order_relaxed);
    }
    void suspend_top_ups_until(std::int64_t until_ms) {
        no_top_up_until_.store(until_ms, std::memory_order_relaxed);
    }

  private:
    std::atomic<std::int64_t> available_{0};
    std::atomic<std::int64_t> taken_behind_{0};
    std::atomic<std::int64_t> reported_behind_{0};
    std::atomic<std::int64_t> taken_{0};
    std::atomic<std::int64_t> no_top_up_until_{0};
    std::atomic<std::int64_t> expires_at_{0};
};

class node_state {
  public:
    node_state();
    node_state(const node_state&) = delete;
    node_state& operator=(const node_state&) = delete;

    // The latest snapshot; never null. Workers cache it and reload only when version() moves.
    std::shared_ptr<const state_snapshot> snapshot() const {
        return snapshot_.load(std::memory_order_acquire);
    }
    std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
    // Publishes a new snapshot (its version is set here, and each room's taken_behind_mark()).
    // Sync task only.
    void publish(std::shared_ptr<state_snapshot> s);

    // The slot pool of a room, created on first use; the address is stable for the node's life.
    slot_pool& pool(const std::string& room_id);
    // Visits every pool (sync task: returns and lease expiry).
    template <class F>
    void for_each_pool(F&& f) {
        std::lock_guard lock(mu_);
        for (auto& [id, p] : pools_) {
            f(id, *p);
        }
    }

    // Worker deltas in, sync task out. Locked, but never on the decision path: workers submit
    // once per sync interval. Submitted entries are reset in place (keys kept).
    void submit(delta_set& deltas);
    bool try_submit(delta_set& deltas);  // never blocks; leaves `deltas` untouched on contention
    delta_set take_deltas();
    // Check-ins handed over and not taken by a sync yet that moved visitors out of windows the
    // store no longer counts at `now_ms` (their renewals: the store counts their places free).
    std::int64_t unreported_renewals(const std::string& room_id, const room_limits& l,
                                     std::int64_t now_ms);

  private:
    void move_into(delta_set& deltas);  // inbox_mu_ held

    std::atomic<std::shared_ptr<const state_snapshot>> snapshot_;
    std::atomic<std::uint64_t> version_{0};
    std::mutex mu_;  // pools_ creation
    std::map<std::string, std::unique_ptr<slot_pool>> pools_;
    std::mutex inbox_mu_;
    delta_set inbox_;
};

}  // namespace waitroom::room
