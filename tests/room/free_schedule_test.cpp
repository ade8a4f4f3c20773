// When a room's places will free: cumulative admissions rebuilt from the sliding minute, holds
// measured from the session ends, the expected frees to come (issue 16, item 4).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>

#include "waitroom/room/free_schedule.hpp"

namespace waitroom::room {
namespace {

constexpr std::int64_t t0 = 1'800'000'000'000 - 1'800'000'000'000 % 60'000;
constexpr free_schedule::limits room20{20, 60'000, 60'000};

// A room of 20 that fills one place a second from t0 and whose every place is held exactly
// `hold_ms`, then refilled at once from a long queue: the store's counts, followed each second.
struct generations {
    std::int64_t hold_ms;
    std::deque<std::int64_t> admitted;  // admission times, oldest first
    std::vector<std::int64_t> held;     // admission times of the places held now
    free_schedule fs;
    std::int64_t next = t0;             // the next second to follow

    void run_to(std::int64_t at) {
        for (; next <= at; next += 1'000) {
            for (auto& h : held) {
                if (next - h >= hold_ms) {
                    h = next;  // freed and refilled in the same second
                    admitted.push_back(next);
                }
            }
            if (held.size() < 20) {
                held.push_back(next);
                admitted.push_back(next);
            }
            std::int64_t in_minute = 0;
            for (std::int64_t a : admitted) {
                in_minute += a > next - 60'000 ? 1 : 0;
            }
            fs.follow(next, in_minute, static_cast<std::int64_t>(held.size()), room20, 10'000);
        }
    }
};

TEST(FreeSchedule, KnowsNothingBeforeAPlaceIsSeenToFree) {
    generations g{100'000, {}, {}, {}, t0};
    g.run_to(t0 + 99'000);
    EXPECT_FALSE(g.fs.measured());
    EXPECT_EQ(g.fs.wait_ms(1), -1);
    EXPECT_DOUBLE_EQ(g.fs.admitted(), 20);
    EXPECT_DOUBLE_EQ(g.fs.freed(), 0);
}

// The admissions are rebuilt exactly from the sliding minute (what slid out of it is what came
// a minute before), the frees are matched to the places filled first, and a generation of frees
// teaches the hold: 100 s, where the prior said 120 s.
TEST(FreeSchedule, LearnsTheHoldFromTheSessionEndsItSees) {
    generations g{100'000, {}, {}, {}, t0};
    g.run_to(t0 + 125'000);
    ASSERT_TRUE(g.fs.measured());
    EXPECT_DOUBLE_EQ(g.fs.admitted(), 40);  // 20 filled, 20 freed and refilled
    EXPECT_DOUBLE_EQ(g.fs.freed(), 20);
    EXPECT_NEAR(g.fs.hold_ms(), 100'000, 3'000);
    EXPECT_LT(g.fs.spread_ms(), 30'000);  // the prior's was 60 s
}

// The places held at 125 s were filled at 100-119 s: they free a hold after that, in a
// generation at 200-219 s, not evenly at 20 places per 100 s (the linear model, which told the
// 10th place 50 s where it is 84 s away).
TEST(FreeSchedule, PredictsTheNextGenerationAHoldAfterItWasFilled) {
    generations g{100'000, {}, {}, {}, t0};
    g.run_to(t0 + 125'000);
    const double now = 125'000;
    // The 10th next free: the place filled at 100 + 9 s, free at 209 s.
    EXPECT_NEAR(g.fs.wait_ms(10), 209'000 - now, 15'000);
    EXPECT_GT(g.fs.wait_ms(10), 65'000);  // the linear model: 10 places at 12 a minute, 50 s
    // The 30th: a generation later still (the 10th refill, freeing at 309 s).
    EXPECT_NEAR(g.fs.wait_ms(30), 309'000 - now, 25'000);
    // Monotone in the places needed, 0 for none.
    EXPECT_EQ(g.fs.wait_ms(0), 0);
    double last = 0;
    for (double k = 0.5; k < 200; k += 0.5) {
        const double w = g.fs.wait_ms(k);
        EXPECT_GE(w, last) << k;
        last = w;
    }
}

// A store outage (a gap longer than a window) says nothing of what happened in it: the history
// starts over (what was learned of the holds stays).
TEST(FreeSchedule, AGapStartsTheHistoryOverAndKeepsTheHold) {
    generations g{100'000, {}, {}, {}, t0};
    g.run_to(t0 + 125'000);
    const double hold = g.fs.hold_ms();
    free_schedule fs = g.fs;
    fs.follow(t0 + 200'000, 5, 20, room20, 10'000);
    EXPECT_DOUBLE_EQ(fs.admitted(), 20);
    EXPECT_DOUBLE_EQ(fs.freed(), 0);
    EXPECT_DOUBLE_EQ(fs.hold_ms(), hold);
    // A step back in time too.
    fs.follow(t0 + 100'000, 5, 20, room20, 10'000);
    EXPECT_DOUBLE_EQ(fs.freed(), 0);
}

// Whatever the store's counts say (a bot cannot move them beyond the limits, but a corrupt or
// hostile store could), the history stays bounded, the learned hold stays within a session and
// the history, and every wait is finite and never negative.
TEST(FreeSchedule, StaysBoundedAndFiniteForAnyCounts) {
    std::mt19937_64 rng(7);
    free_schedule fs;
    const free_schedule::limits l{1'000'000, 3'600'000, 60'000};
    std::int64_t at = t0;
    constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max() / 4;
    for (int i = 0; i < 200'000; ++i) {
        at += static_cast<std::int64_t>(rng() % 3'000);
        const std::int64_t pick = static_cast<std::int64_t>(rng() % 4);
        const std::int64_t alm = pick == 0 ? -5 : pick == 1 ? big : static_cast<std::int64_t>(rng() % 5000);
        const std::int64_t active = pick == 2 ? -1 : static_cast<std::int64_t>(rng() % 1'000'000);
        fs.follow(at, alm, active, l, 10'000);
        ASSERT_LE(fs.history_points(), free_schedule::max_marks);
        if (i % 997 == 0) {
            for (double k : {0.0, 1.0, 1e3, 1e9, 1e18, std::numeric_limits<double>::infinity()}) {
                const double w = fs.wait_ms(k);
                ASSERT_TRUE(w == -1 || (w >= 0 && std::isfinite(w))) << i << " " << k << " " << w;
            }
        }
    }
    EXPECT_LE(fs.history_points(), free_schedule::max_marks);
    ASSERT_TRUE(fs.measured());
    EXPECT_GE(fs.hold_ms(), 3'600'000);
    EXPECT_LE(fs.hold_ms(), 8 * 3'600'000);
    EXPECT_TRUE(std::isfinite(fs.spread_ms()));
}

}  // namespace
}  // namespace waitroom::room
