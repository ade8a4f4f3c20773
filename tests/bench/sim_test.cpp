// Smoke test of the accuracy simulator: two short scenarios through the real room/
// and state/ code, metrics computed from the simulator's own record of visitors, and the shape
// of the JSON report. The full run is bench/README.md's business, not CI's.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "report.hpp"
#include "scenario.hpp"
#include "simulator.hpp"

namespace waitroom::sim {
namespace {

TEST(Simulator, TrafficFarBelowTheLimitsQueuesNobodyAndNeverOvershoots) {
    auto s = builtin("smoke-quiet");
    ASSERT_TRUE(s);
    sim_result r = run(*s);
    metrics m = compute(*s, r);
    EXPECT_GT(m.arrivals, 100);
    EXPECT_EQ(m.admitted, m.arrivals);
    EXPECT_EQ(m.queued, 0);
    EXPECT_EQ(m.lost_sessions, 0);
    EXPECT_EQ(m.max_queue, 0);
    EXPECT_LT(m.overshoot_active, 0.0);
    EXPECT_LT(m.overshoot_rate, 0.0);
    EXPECT_FALSE(m.queue_onset_utilization);
    EXPECT_FALSE(m.idle_capacity_while_queued);
    EXPECT_FALSE(m.eta_error_median);
    // One sync per second; a node alone without recent demand leases nothing, so an arrival
    // after a quiet interval may add one top-up: under two calls per interval, whatever the
    // traffic.
    EXPECT_GE(m.store_calls_per_node_minute, 58.0);
    EXPECT_LT(m.store_calls_per_node_minute, 120.0);
}

// The attacker's scenarios beside their calm twins: its requests are made and none is a
// visitor's; a flood of cookieless requests and a replayed cookie leave a fifo room's visitors
// waiting as long as without them, and in a random room the visitors all get in either way.
TEST(Simulator, AnAttackerFloodsBesideTheVisitorsAndTheirWaitsAreReportedWithAndWithoutIt) {
    for (const char* name : {"flood-fifo", "replay-fifo", "flood-random", "back-once-random"}) {
        SCOPED_TRACE(name);
        auto attacked = builtin(name);
        ASSERT_TRUE(attacked);
        const bool fifo = attacked->method == config::queueing_method::fifo;
        auto calm = builtin(fifo ? "flood-fifo-calm" : "flood-random-calm");
        ASSERT_TRUE(calm);
        sim_result a = run(*attacked);
        sim_result c = run(*calm);
        EXPECT_GT(a.attack_requests, 10'000);
        EXPECT_EQ(c.attack_requests, 0);
        ASSERT_EQ(a.visitors.size(), c.visitors.size()) << "the same crowd";
        metrics ma = compute(*attacked, a);
        metrics mc = compute(*calm, c);
        if (fifo) {
            // One refresh (10 s) at most, and no more than the attacker's places (one each).
            EXPECT_LE(ma.wait_median_s, mc.wait_median_s + 10);
            EXPECT_LE(a.attack_admitted, 1);
        }
        EXPECT_GE(ma.admitted, mc.admitted * 8 / 10);
    }
}

TEST(Simulator, SmallSpikeReportsEveryMetricWithinSaneBounds) {
    auto s = builtin("smoke-spike");
    ASSERT_TRUE(s);
    sim_result r = run(*s);
    metrics m = compute(*s, r);
    EXPECT_GT(m.queued, 0);
    EXPECT_EQ(m.lost_sessions, 0);
    EXPECT_LE(m.overshoot_active, 0.05);
    EXPECT_LE(m.overshoot_rate, 0.05);
    EXPECT_GE(m.overshoot_rate, -0.05);  // the spike does fill the per-minute limit
    ASSERT_TRUE(m.queue_onset_utilization);
    EXPECT_GT(*m.queue_onset_utilization, 0.0);
    EXPECT_LE(*m.queue_onset_utilization, 1.05);
    ASSERT_TRUE(m.idle_capacity_while_queued);
    EXPECT_GE(*m.idle_capacity_while_queued, 0.0);
    EXPECT_LT(*m.idle_capacity_while_queued, 0.5);
    ASSERT_TRUE(m.fifo_inversions);
    EXPECT_LT(*m.fifo_inversions, 0.05);
    ASSERT_TRUE(m.eta_error_median);
    EXPECT_GE(*m.eta_error_median, 0.0);
    ASSERT_EQ(m.store_calls_per_minute.size(), 2u);

    nlohmann::json j = to_json(*s, m);
    EXPECT_EQ(j.at("name"), "smoke-spike");
    for (const char* k : {"overshoot_active", "overshoot_rate", "queue_onset_utilization",
                          "idle_capacity_while_queued", "fifo_inversions", "eta_error_median",
                          "store_calls_per_node_minute"}) {
        ASSERT_TRUE(j.at("metrics").contains(k)) << k;
        EXPECT_TRUE(j.at("metrics").at(k).is_number()) << k;
    }
    for (const char* k : {"overshoot_active", "overshoot_rate", "queue_onset_utilization",
                          "idle_capacity_while_queued", "fifo_inversions", "eta_error_median"}) {
        EXPECT_TRUE(j.at("targets_met").at(k).is_boolean()) << k;
    }
    EXPECT_EQ(j.at("counts").at("arrivals"), m.arrivals);
    EXPECT_NE(table({{*s, m}}).find("smoke-spike"), std::string::npos);
}

// A hand-made record with known answers: the metrics read the record, not the room.
TEST(Simulator, MetricsAreComputedFromTheVisitorRecords) {
    scenario s;
    s.name = "by-hand";
    s.duration_ms = 120'000;
    sim_result r;
    r.limits.assign(120, {2, 10});
    r.store_calls = {120};
    r.top_ups = {0};
    auto admitted = [](std::int64_t arrival, std::int64_t at, std::int64_t end) {
        visitor_record v;
        v.arrival = arrival;
        v.admitted = at;
        v.session_end = end;
        return v;
    };
    r.visitors.push_back(admitted(0, 0, 100'000));
    r.visitors.push_back(admitted(1'000, 1'000, 100'000));
    // Arrived in a later window than the next one, queued, admitted before it: one inversion.
    visitor_record late = admitted(25'000, 30'000, 100'000);
    late.first_queued = 25'000;
    late.estimate_ms = 10'000;  // waited 5 s, told 10 s: error 100%
    r.visitors.push_back(late);
    visitor_record early = admitted(12'000, 40'000, 100'000);
    early.first_queued = 12'000;
    early.estimate_ms = 28'000;  // waited 28 s exactly
    r.visitors.push_back(early);
    r.first_queue_ms = 12'000;

    metrics m = compute(s, r);
    EXPECT_DOUBLE_EQ(m.overshoot_active, 1.0);  // 4 sessions at once against a limit of 2
    EXPECT_DOUBLE_EQ(m.overshoot_rate, -0.6);   // 4 admissions in a minute against 10
    ASSERT_TRUE(m.queue_onset_utilization);
    EXPECT_DOUBLE_EQ(*m.queue_onset_utilization, 1.0);  // 2 of 2 active at 12 s
    ASSERT_TRUE(m.fifo_inversions);
    // Windows 0,0,2,1 admitted in that order: pairs in different windows = 5, inverted = 1.
    EXPECT_DOUBLE_EQ(*m.fifo_inversions, 0.2);
    ASSERT_TRUE(m.eta_error_median);
    EXPECT_DOUBLE_EQ(*m.eta_error_median, 0.5);  // median of 0 and 1
    EXPECT_DOUBLE_EQ(m.store_calls_per_node_minute, 60.0);
    ASSERT_TRUE(m.idle_capacity_while_queued);
    EXPECT_DOUBLE_EQ(*m.idle_capacity_while_queued, 0.0);  // someone waits only while full
}

// Idle capacity is a time average, not a sample at whole seconds: the store frees the sessions
// it holds a window longer at whole 10 s, so whole seconds are where idle capacity peaks.
TEST(Simulator, IdleCapacityIsTheExactTimeAverageWhileSomeoneWaits) {
    scenario s;
    s.name = "idle";
    s.duration_ms = 30'000;
    sim_result r;
    r.limits.assign(30, {2, 60});
    r.store_calls = {30};
    r.top_ups = {0};
    visitor_record a;  // holds a place until 10 s
    a.admitted = 0;
    a.session_end = 10'000;
    visitor_record b;  // holds the other all along
    b.admitted = 0;
    b.session_end = 29'000;
    visitor_record c;  // waits from 5 s; A's place stays free from 10 s to 10.5 s
    c.arrival = 5'000;
    c.first_queued = 5'000;
    c.admitted = 10'500;
    c.session_end = 29'000;
    r.visitors = {a, b, c};

    metrics m = compute(s, r);
    ASSERT_TRUE(m.idle_capacity_while_queued);
    // Half the places free for 0.5 s of the 5.5 s someone waited (sampling at 5..10 s: 1/12).
    EXPECT_NEAR(*m.idle_capacity_while_queued, 0.5 * 0.5 / 5.5, 1e-12);
}

TEST(Simulator, SeedTableGivesMinMedianMaxAndMarksAMissByTheWorstSeed) {
    scenario s;
    s.name = "seeds";
    std::vector<metrics> runs(3);
    const double idle[] = {0.02, 0.035, 0.01};  // one seed misses the 3% target
    for (int i = 0; i < 3; ++i) {
        runs[i].idle_capacity_while_queued = idle[i];
        runs[i].queue_onset_utilization = 0.98 + 0.01 * i;
        runs[i].store_calls_per_node_minute = 60 + i;
    }
    std::string t = seed_table({{s, runs}});
    EXPECT_NE(t.find("1.00 / 2.00 / 3.50*"), std::string::npos) << t;
    EXPECT_NE(t.find("98.0 / 99.0 / 100.0 "), std::string::npos) << t;

    nlohmann::json j = seed_summary(s, runs);
    EXPECT_EQ(j.at("seeds"), 3);
    EXPECT_DOUBLE_EQ(j.at("metrics").at("idle").at("min").get<double>(), 0.01);
    EXPECT_DOUBLE_EQ(j.at("metrics").at("idle").at("median").get<double>(), 0.02);
    EXPECT_DOUBLE_EQ(j.at("metrics").at("idle").at("max").get<double>(), 0.035);
    EXPECT_FALSE(j.at("targets_met").at("idle").get<bool>());
    EXPECT_TRUE(j.at("targets_met").at("onset").get<bool>());
    EXPECT_TRUE(j.at("targets_met").at("eta_err").is_null());
}

TEST(Simulator, LoadsAScenarioFromYamlAndNamesAnUnknownKey) {
    const std::string path = ::testing::TempDir() + "sim_scenario_test.yaml";
    std::ofstream(path) << R"(name: from-yaml
duration: 5m
room: {total_active_users: 300, new_users_per_minute: 60, session_duration: 2m}
nodes: {shares: [70, 20, 5, 5], load_balancer: spread, sync_delay: 20ms}
outages: [{start: 2m, length: 30s}]
visitors:
  arrivals: {shape: spike, base: 10, peak: 600, at: 1m, length: 1m}
  abandon_share: 0.3
)";
    std::string err;
    auto s = load_scenario(path, err);
    ASSERT_TRUE(s) << err;
    EXPECT_EQ(s->name, "from-yaml");
    EXPECT_EQ(s->duration_ms, 300'000);
    EXPECT_EQ(s->total_active_users, 300u);
    EXPECT_EQ(s->session_ms, 120'000);
    EXPECT_EQ(s->node_shares.size(), 4u);
    EXPECT_FALSE(s->sticky);
    EXPECT_EQ(s->sync_delay_ms, 20);
    ASSERT_EQ(s->outages.size(), 1u);
    EXPECT_EQ(s->outages[0].length_ms, 30'000);
    EXPECT_DOUBLE_EQ(s->arrivals.rate_at(90'000), 600.0);
    EXPECT_DOUBLE_EQ(s->arrivals.rate_at(150'000), 10.0);
    EXPECT_DOUBLE_EQ(s->abandon_share, 0.3);

    std::ofstream(path) << "name: bad\nroom: {total_active_user: 3}\n";
    EXPECT_FALSE(load_scenario(path, err));
    EXPECT_NE(err.find("room.total_active_user: unknown key"), std::string::npos) << err;
    std::remove(path.c_str());
}

// The real-process harness's crowd (issue 16): exactly `count` arrivals within `over`, browsing
// U(min, max) with jittered pages, late and early refreshers; a bad range is refused by name.
TEST(Simulator, LoadsAndRunsTheHarnessCrowd) {
    const std::string path = ::testing::TempDir() + "sim_crowd_test.yaml";
    std::ofstream(path) << R"(name: crowd
duration: 10m
room: {total_active_users: 20, new_users_per_minute: 60, session_duration: 60s, refresh_interval: 5s}
visitors:
  crowd: {count: 60, over: 20s}
  browse_time: [20s, 60s]
  page_jitter: 0.2
  page_interval: 5s
  abandon_share: 0.3
  patience: [25s, 35s]
  refresh_mix: {late: 0.2, early: 0.1}
windowing: {front_hold: 6s}
)";
    std::string err;
    auto s = load_scenario(path, err);
    ASSERT_TRUE(s) << err;
    EXPECT_EQ(s->crowd_count, 60);
    EXPECT_EQ(s->crowd_over_ms, 20'000);
    EXPECT_EQ(s->browse_min_ms, 20'000);
    EXPECT_EQ(s->browse_max_ms, 60'000);
    EXPECT_EQ(s->patience_min_ms, 25'000);
    EXPECT_EQ(s->patience_max_ms, 35'000);
    EXPECT_TRUE(s->refresh_mix);
    EXPECT_DOUBLE_EQ(s->refresh_late_share, 0.2);
    EXPECT_EQ(s->windowing.front_hold_ms, 6'000);
    const sim_result r = run(*s);
    ASSERT_EQ(r.visitors.size(), 60u);
    int gave_up = 0;
    for (const auto& v : r.visitors) {
        EXPECT_LT(v.arrival, 20'000);
        if (v.admitted >= 0) {
            // A page at admission and every 4-6 s while within 20-60 s, then a session: the
            // last page is 14-60 s after admission.
            EXPECT_GE(v.session_end - v.admitted, 14'000 + 60'000);
            EXPECT_LE(v.session_end - v.admitted, 60'000 + 60'000);
        } else {
            ++gave_up;
        }
    }
    EXPECT_GT(gave_up, 0);

    std::ofstream(path) << "name: bad\nvisitors: {browse_time: [60s, 20s]}\n";
    EXPECT_FALSE(load_scenario(path, err));
    EXPECT_NE(err.find("visitors.browse_time: expected 0 <= min <= max"), std::string::npos) << err;
    std::remove(path.c_str());
}

// The crowd starts at a drawn instant (the harness's random phase of the arrival window), and a
// harness run's own crowd can be replayed visitor by visitor: arrival, refresher kind, node,
// browse time and patience as given; only the timing of their requests is drawn.
TEST(Simulator, StartsTheCrowdInItsRangeAndReplaysAGivenCrowd) {
    const std::string path = ::testing::TempDir() + "sim_replay_test.yaml";
    std::ofstream(path) << R"(name: start
duration: 5m
room: {total_active_users: 20, new_users_per_minute: 60, session_duration: 60s, refresh_interval: 5s}
visitors:
  crowd: {count: 60, over: 20s, start: [5s, 65s]}
)";
    std::string err;
    auto s = load_scenario(path, err);
    ASSERT_TRUE(s) << err;
    EXPECT_EQ(s->crowd_start_min_ms, 5'000);
    EXPECT_EQ(s->crowd_start_max_ms, 65'000);
    std::int64_t first = s->duration_ms;
    std::int64_t last = 0;
    for (const auto& v : run(*s).visitors) {
        first = std::min(first, v.arrival);
        last = std::max(last, v.arrival);
    }
    EXPECT_GE(first, 5'000);
    EXPECT_LT(last, 85'000);
    EXPECT_LE(last - first, 20'000);

    std::ofstream(path) << R"(name: replay
duration: 5m
room: {total_active_users: 1, new_users_per_minute: 60, session_duration: 60s, refresh_interval: 5s}
nodes: {shares: [50, 50]}
visitors:
  browse_time: [20s, 60s]
  refresh_mix: {late: 0.2, early: 0.1}
  replay:
    - {at: 12345ms, kind: punctual, node: 1, browse: 30s}
    - {at: 13000ms, kind: late, node: 0, patience: 20s}
    - {at: 14000ms, kind: early}
)";
    s = load_scenario(path, err);
    ASSERT_TRUE(s) << err;
    ASSERT_EQ(s->replay.size(), 3u);
    const sim_result r = run(*s);
    ASSERT_EQ(r.visitors.size(), 3u);
    const auto& a = r.visitors[0];
    EXPECT_EQ(a.arrival, 12'345);
    EXPECT_EQ(a.node, 1);
    EXPECT_EQ(a.admitted, 12'345);  // the room is empty
    // Pages every 5 s for 30 s: the last page 25-30 s after admission, the place held 60 s more.
    EXPECT_GE(a.session_end - a.admitted, 25'000 + 60'000);
    EXPECT_LE(a.session_end - a.admitted, 30'000 + 60'000);
    const auto& b = r.visitors[1];
    EXPECT_EQ(b.node, 0);
    EXPECT_EQ(b.refresh_kind, 1);
    EXPECT_EQ(b.admitted, -1);  // the one place is held for 85 s or more: gave up after 20 s
    EXPECT_GE(b.left, 13'000 + 20'000 - 12'500);  // left at its last answer before its patience
    EXPECT_LE(b.left, 13'000 + 20'000);
    EXPECT_EQ(r.visitors[2].refresh_kind, 2);

    std::ofstream(path)
        << "name: bad\nnodes: {shares: [100]}\nvisitors: {replay: [{at: 1s, node: 1}]}\n";
    EXPECT_FALSE(load_scenario(path, err));
    EXPECT_NE(err.find("visitors.replay[].node: no such node"), std::string::npos) << err;
    std::ofstream(path) << "name: bad\nvisitors: {replay: [{at: 1s, kind: sometimes}]}\n";
    EXPECT_FALSE(load_scenario(path, err));
    EXPECT_NE(err.find("visitors.replay[].kind: expected punctual, late or early"),
              std::string::npos)
        << err;
    std::ofstream(path) << "name: bad\nvisitors: {replay: [{kind: late}]}\n";
    EXPECT_FALSE(load_scenario(path, err));
    std::ofstream(path) << "name: bad\nvisitors: {replay: {at: 1s}}\n";
    EXPECT_FALSE(load_scenario(path, err));
    EXPECT_NE(err.find("visitors.replay: expected a list of visitors"), std::string::npos) << err;
    std::remove(path.c_str());
}

}  // namespace
}  // namespace waitroom::sim
