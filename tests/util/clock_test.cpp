#include "waitroom/util/clock.hpp"

#include <gtest/gtest.h>

#include <thread>

using namespace std::chrono_literals;
using waitroom::util::manual_clock;
using waitroom::util::scaled_clock;

TEST(ManualClock, MovesOnlyWhenAdvanced) {
    manual_clock c;
    auto t0 = c.now();
    c.advance(90s);
    EXPECT_EQ(c.now() - t0, 90s);
    EXPECT_EQ(c.now(), c.now());
}

TEST(ScaledClock, RunsFasterThanRealTime) {
    scaled_clock c{1000.0};
    auto t0 = c.now();
    std::this_thread::sleep_for(20ms);
    // 20 ms real at 1000x is at least 20 s of product time.
    EXPECT_GE(c.now() - t0, 19s);
}
