#pragma once
// A simulator scenario: the room, the nodes and their store, and the visitors, all in
// virtual time relative to the start of the run. Built in by name or loaded from YAML.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/room/limits.hpp"

namespace waitroom::sim {

// Arrival rate over time: (ms since start, visitors per minute), linear between points, the
// last value held after the last point.
struct arrival_curve {
    std::vector<std::pair<std::int64_t, double>> points;

    double rate_at(std::int64_t t_ms) const;  // visitors per minute
    double peak() const;
};

struct outage {
    std::int64_t start_ms = 0;  // since the start of the run
    std::int64_t length_ms = 0;
};

// An event of the room, times relative to the start of the run.
struct event_spec {
    std::int64_t prequeue_ms = 0;
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;
    std::optional<std::uint32_t> total_active_users;
    std::optional<std::uint32_t> new_users_per_minute;
    bool shuffle_at_event_start = false;
};

// One visitor of a replayed crowd (visitors.replay): a harness run's own visitors, so that the
// simulator and the daemons can be compared on the same crowd, visitor by visitor.
struct replay_visitor {
    std::int64_t at_ms = 0;         // arrival, since the start of the run
    int refresh_kind = 0;           // 0 punctual, 1 late, 2 early (as refresh_mix)
    std::int64_t browse_ms = -1;    // once admitted; -1: drawn as browse_time says
    std::int64_t patience_ms = -1;  // gives up this long after arriving; -1: never
    int node = -1;                  // the sticky node; -1: drawn by the shares
};

// A client beside the visitors that tries to stretch the queue: cookieless requests, tickets
// that come back once with the cookie they were given (and never again), or copies of one queued
// cookie replayed. Its requests are no visitors: every figure of the report is the visitors'.
enum class attack_kind { none, cookieless, back_once, replay };

struct attack_spec {
    attack_kind kind = attack_kind::none;
    double per_second = 25;    // requests (a ticket back once: two requests)
    std::int64_t from_ms = 0;  // since the start of the run
    std::int64_t to_ms = -1;   // -1: until the end
};

struct scenario {
    std::string name;
    std::string description;
    std::int64_t duration_ms = 3'600'000;
    std::uint64_t seed = 1;
    bool plot = false;  // write the active/queue plot next to the report

    // The room (the five setup fields plus what the engine reads).
    std::uint32_t total_active_users = 2000;
    std::uint32_t new_users_per_minute = 200;
    std::int64_t session_ms = 300'000;
    std::int64_t refresh_ms = 20'000;
    bool disable_session_renewal = false;
    config::queueing_method method = config::queueing_method::fifo;
    std::optional<event_spec> event;
    room::windowing windowing;

    // Nodes and the store between them.
    std::vector<double> node_shares{1.0};  // traffic share of each node (normalised)
    int workers_per_node = 2;
    bool sticky = true;  // false: every request picks a node by share
    std::int64_t sync_interval_ms = 1'000;
    std::int64_t sync_delay_ms = 0;       // round trip of a store call
    std::int64_t store_timeout_ms = 500;  // a call during an outage fails after this long
    std::int64_t top_up_retry_ms = -1;    // -1: as the daemon (sync_interval / 4)
    std::int64_t top_up_min = 1;          // sync_options::top_up_min: smallest top-up asked for
    std::vector<outage> outages;

    // Visitors.
    arrival_curve arrivals;
    attack_spec attack;                     // none by default
    std::int64_t browse_mean_ms = 120'000;  // admission to last page view, uniform 0..2×mean
    std::int64_t page_interval_ms = 30'000;
    double abandon_share = 0.0;               // share of queued visitors who give up
    std::int64_t patience_mean_ms = 180'000;  // how long they wait first (exponential)
    bool adaptive_refresh = true;             // honour the decision's Refresh (else refresh_ms)

    // The visitors of the real-process harness (bench/fidelity). Each is off by default, so the
    // model above (and the built-in scenarios' results) stays as it is without them.
    std::int64_t crowd_count = 0;  // > 0: exactly this many arrivals, uniform over crowd_over
    std::int64_t crowd_over_ms = 0;
    // When the crowd starts, uniform in [min, max] per run. The harness starts it at a random
    // phase of the arrival window and of the minute (its clock is the wall clock); the
    // simulator's windows are aligned on its start, so [5s, 65s] gives the same phases.
    std::int64_t crowd_start_min_ms = 0;
    std::int64_t crowd_start_max_ms = 0;
    std::int64_t browse_min_ms = -1;  // ≥ 0: browse U(browse_min, browse_max) instead of the mean
    std::int64_t browse_max_ms = -1;
    double page_jitter = 0.0;           // pages every page_interval × U(1 − j, 1 + j)
    std::int64_t patience_min_ms = -1;  // ≥ 0: patience U(min, max) instead of exponential
    std::int64_t patience_max_ms = -1;
    // Refresh kinds: when set, punctual visitors come back after R × U(1, 1.05) + U(50, 500) ms
    // (the page load), late ones after R × U(1.3, 2.5) (background tabs), early ones after
    // R × U(0.4, 0.9) (reloads by hand), R being the Refresh served.
    bool refresh_mix = false;
    double refresh_late_share = 0.0;
    double refresh_early_share = 0.0;
    // A crowd given visitor by visitor instead of drawn (bench/fidelity/compare.py --replay).
    std::vector<replay_visitor> replay;
};

// The built-in accuracy scenarios, run when none is named.
std::vector<std::string> builtin_names();
// The built-in scenarios plus the two short smoke scenarios ("smoke-quiet", "smoke-spike") and
// the attacker's (attack_names).
std::optional<scenario> builtin(const std::string& name);
// The scenarios with an attacker, each beside its calm twin (`NAME-calm`: the same crowd without
// it), run with --attacks.
std::vector<std::string> attack_names();

// Loads a scenario file; on error returns nullopt and sets `error` ("file: what").
std::optional<scenario> load_scenario(const std::string& path, std::string& error);

}  // namespace waitroom::sim
