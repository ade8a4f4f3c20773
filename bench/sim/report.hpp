#pragma once
// The accuracy metrics of DESIGN.md §5, computed from the simulator's ground truth (its record
// of every visitor), never from the room's own counters; and their table, JSON and plot.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario.hpp"
#include "simulator.hpp"

namespace waitroom::sim {

struct metrics {
    // The five targets. nullopt = not applicable (e.g. nobody was ever queued).
    double overshoot_active = 0;  // max true active / total_active_users − 1
    double overshoot_rate = 0;    // max admissions in a 60 s span / new_users_per_minute − 1
    std::optional<double> queue_onset_utilization;     // when queueing first started
    std::optional<double> idle_capacity_while_queued;  // mean free share while anyone waits
    std::optional<double> fifo_inversions;             // share of admitted pairs out of order
    std::optional<double> eta_error_median;            // |estimate − actual| / actual
    double store_calls_per_node_minute = 0;            // the busiest node
    std::vector<double> store_calls_per_minute;        // per node

    // Context.
    std::optional<double> eta_bias_median;  // (estimate − actual) / actual, signed
    // FIFO inversions between arrival minutes instead of windows.
    std::optional<double> fifo_inversions_minutes;
    // The same two for the estimate in whole minutes (waitTime) instead of waitTimeSeconds.
    std::optional<double> eta_error_minutes_median;
    std::optional<double> eta_bias_minutes_median;
    std::int64_t arrivals = 0;
    std::int64_t admitted = 0;
    std::int64_t queued = 0;     // visitors who saw a queue page
    std::int64_t abandoned = 0;  // gave up waiting
    std::int64_t rejected = 0;
    std::int64_t still_waiting = 0;  // at the end of the run
    std::int64_t lost_sessions = 0;  // admitted visitors queued again (must be 0)
    std::int64_t max_queue = 0;
    double wait_median_s = 0;
    double wait_p95_s = 0;
    std::int64_t top_ups = 0;
    std::int64_t decisions = 0;
};

metrics compute(const scenario& s, const sim_result& r);

// One row per scenario: every metric, with a mark where a target is missed.
std::string table(const std::vector<std::pair<scenario, metrics>>& rows);
// One row per scenario run with several seeds: min / median / max of each target metric, with a
// mark where the worst seed misses (a pass must not depend on the seed).
std::string seed_table(const std::vector<std::pair<scenario, std::vector<metrics>>>& rows);
nlohmann::json seed_summary(const scenario& s, const std::vector<metrics>& runs);
nlohmann::json to_json(const scenario& s, const metrics& m);
// The run's diagnostics (why the first visitor was queued, store calls by kind).
nlohmann::json diagnostics(const sim_result& r);

// Every visitor's record, in seconds since the start of the run (null = never), with the field
// names of the harness's visitors.json where there is one: for bench/fidelity/compare.py.
nlohmann::json visitors_json(const scenario& s, const sim_result& r);

// Writes DIR/NAME.tsv and DIR/NAME.gp and runs gnuplot for DIR/NAME.png. Returns the PNG path,
// or "" when gnuplot is missing or failed.
std::string plot(const scenario& s, const sim_result& r, const std::string& dir);

// The targets of DESIGN.md §5.
struct targets {
    static constexpr double overshoot = 0.01;
    static constexpr double onset = 0.97;
    static constexpr double idle = 0.03;
    static constexpr double fifo = 0.005;
    static constexpr double eta = 0.25;
};

}  // namespace waitroom::sim
