#pragma once
// The accuracy simulator: N nodes, each with its own node_state, workers and sync_task, share
// one local_store through a link with a round-trip delay and outages, all in virtual time. It
// drives the real room engine with simulated visitors and keeps its own record of every visitor
// (the ground truth the metrics are computed from).

#include <cstdint>
#include <utility>
#include <vector>

#include "scenario.hpp"

namespace waitroom::sim {

// What the simulator knows for certain about one visitor (ms since the start of the run; -1 =
// never).
struct visitor_record {
    std::int64_t arrival = 0;
    std::int64_t first_queued = -1;  // first queue page
    std::int64_t admitted = -1;
    std::int64_t session_end = -1;  // last page view + session_duration (the product's session)
    std::int64_t left = -1;         // gave up waiting, or was rejected
    std::int64_t estimate_ms = -1;  // wait estimate on the first queue page (waitTimeSeconds)
    std::int64_t estimate_minutes_ms = -1;  // the same in whole minutes (waitTime)
    bool prequeued = false;                 // arrived while the event was prequeueing
    bool rejected = false;
    bool lost_session = false;  // queued again while its session should still hold
    // For the per-visitor dump (--visitors), to set beside the harness's visitors.json.
    int node = 0;                      // the sticky node (first request's node when spreading)
    int refresh_kind = 0;              // refresh_mix: 0 punctual, 1 late, 2 early
    std::int64_t first_position = -1;  // queuePosition on the first queue page
    std::int64_t pages = 0;            // origin pages served, the admission included
    // Every queue answer: (ms since start, Refresh served in seconds).
    std::vector<std::pair<std::int64_t, std::int64_t>> queue_answers;
    // waitTimeSeconds of each of those answers (-1: no estimate), to score every answer.
    std::vector<std::int64_t> queue_waits;
};

// The room's own view, sampled once a second from the store (for the plot).
struct store_sample {
    std::int64_t t = 0;
    std::int64_t active = 0;
    std::int64_t waiting = 0;
    std::int64_t held = 0;
    std::int64_t unheld = 0;  // capacity no node holds: min(total − active, rate − admitted) − held
    std::int64_t pooled = 0;  // slots in the nodes' pools, not used yet
};

struct sim_result {
    std::vector<visitor_record> visitors;
    std::int64_t first_queue_ms = -1;  // first visitor queued while nobody waited (not prequeue)
    // Why the first visitor was queued: the node, what its pool held, and the store's view then.
    struct first_queue_info {
        int node = -1;
        std::int64_t pool_available = 0;
        std::int64_t store_held = 0;      // slots leased to all nodes and not used
        std::int64_t store_capacity = 0;  // min(total − active, per-minute − admitted), store
        std::vector<std::int64_t> held_by_node;  // slots in each node's pool
    } first_queue;
    std::vector<std::int64_t> store_calls;  // per node: syncs + top-ups sent to the store
    std::vector<std::int64_t> top_ups;      // per node
    std::int64_t decisions = 0;
    std::int64_t attack_requests = 0;  // the attacker's requests (scenario::attack)
    std::int64_t attack_admitted = 0;  // its requests that were admitted (places it took)
    std::vector<store_sample> store_view;
    // Limits in force, sampled each second: (total_active_users, new_users_per_minute).
    std::vector<std::pair<std::int64_t, std::int64_t>> limits;
};

sim_result run(const scenario& s);

}  // namespace waitroom::sim
