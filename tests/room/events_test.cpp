// Scheduled events: prequeue, start (in arrival order or shuffled), overrides and end.

#include <gtest/gtest.h>

#include <algorithm>

#include "room/harness.hpp"

namespace waitroom::room {
namespace {

using namespace std::chrono_literals;
using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;

// Prequeue from +10 min, start at +20 min, end at +60 min; the event allows 3 active users.
config::room event_room(std::int64_t start_ms, bool shuffle) {
    auto r = make_room("launch", 100, 1000);
    config::event ev;
    ev.name = "launch";
    auto at = [&](std::int64_t ms) { return config::time_point{std::chrono::milliseconds{ms}}; };
    ev.prequeue_start_time = at(start_ms + 10 * 60'000);
    ev.event_start_time = at(start_ms + 20 * 60'000);
    ev.event_end_time = at(start_ms + 60 * 60'000);
    ev.total_active_users = 3;
    ev.shuffle_at_event_start = shuffle;
    r.events.push_back(ev);
    return r;
}

std::int64_t minute_start() {
    std::int64_t s = 1'800'000'000;
    return (s - s % 60) * 1000;
}

TEST(Events, RoomRulesApplyBeforeThePrequeue) {
    harness h({event_room(minute_start(), false)});
    visitor v;
    auto d = h.visit(v);
    EXPECT_EQ(d.what, action::admit);
    EXPECT_EQ(v.cookie->event_id, 0u);
}

TEST(Events, PrequeueQueuesEveryNewVisitorEvenWithFreeCapacity) {
    harness h({event_room(minute_start(), false)});
    h.advance(10min + 1s);
    h.sync();
    visitor v;
    auto d = h.visit(v);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_TRUE(d.page.is_event_prequeueing);
    EXPECT_FALSE(d.page.is_event_active);
    EXPECT_EQ(d.page.time_until_event_start, 10);
    EXPECT_EQ(d.page.time_until_event_start_formatted, "10 minutes");
    EXPECT_NE(v.cookie->event_id, 0u);
    EXPECT_LE(d.refresh_seconds, 20);
    h.sync();
    auto st = h.engine().status(h.engine().rooms()[0], h.state("launch"), h.now());
    EXPECT_EQ(st.status, room_status_kind::event_prequeueing);
    EXPECT_EQ(st.event_id, "launch");
    EXPECT_EQ(st.estimated_queued_users, 1);
}

TEST(Events, AtStartThePrequeuedGetInInArrivalOrderAheadOfLaterArrivals) {
    harness h({event_room(minute_start(), false)});
    h.advance(10min);
    std::vector<visitor> pre(5);
    for (auto& v : pre) {
        h.advance(10s);
        h.sync();
        ASSERT_EQ(h.visit(v).what, action::queue);
    }
    // Keep refreshing until the start.
    while (h.now() + 10'000 < minute_start() + 20 * 60'000) {
        h.advance(10s);
        h.sync();
        for (auto& v : pre) {
            ASSERT_EQ(h.visit(v).what, action::queue);
        }
    }
    h.set_time_ms(minute_start() + 20 * 60'000);
    h.sync();
    visitor late;
    EXPECT_EQ(h.visit(late).what, action::queue);
    for (int i = 4; i >= 0; --i) {  // the last arrivals refresh first
        h.visit(pre[i]);
    }
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(pre[i].admitted(), i < 3) << i;
    }
    EXPECT_GT(late.cookie->bucket, pre[4].cookie->bucket);
    auto d = h.visit(late);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_TRUE(d.page.is_event_active);
    EXPECT_EQ(d.page.time_until_event_end, 40);
}

TEST(Events, ShuffleAtStartOrdersThePrequeuedByTicketNotArrival) {
    harness h({event_room(minute_start(), true)}, 11);
    const std::int64_t pre_start = minute_start() + 10 * 60'000;
    const std::int64_t start = minute_start() + 20 * 60'000;
    h.set_time_ms(pre_start);
    std::vector<visitor> pre(20);
    for (auto& v : pre) {
        h.advance(5s);
        h.sync();
        auto d = h.visit(v);
        ASSERT_EQ(d.what, action::queue);
        EXPECT_TRUE(d.page.shuffle_at_event_start);
        EXPECT_GE(v.cookie->bucket, pre_start);
        EXPECT_LT(v.cookie->bucket, start);
    }
    std::vector<std::int64_t> buckets;
    for (auto& v : pre) {
        buckets.push_back(v.cookie->bucket);
    }
    EXPECT_FALSE(std::is_sorted(buckets.begin(), buckets.end()));
    while (h.now() + 10'000 < start) {  // waiting visitors keep refreshing
        h.advance(10s);
        h.sync();
        for (auto& v : pre) {
            ASSERT_EQ(h.visit(v).what, action::queue);
        }
    }
    h.set_time_ms(start);
    h.sync();
    for (int round = 0; round < 4; ++round) {  // everyone refreshes, in arrival order
        for (auto& v : pre) {
            if (!v.admitted()) {
                h.visit(v);
            }
        }
        h.advance(3s);
        h.sync();
    }
    std::int64_t max_in = 0;
    std::int64_t min_out = INT64_MAX;
    int admitted = 0;
    for (auto& v : pre) {
        if (v.admitted()) {
            ++admitted;
            max_in = std::max(max_in, v.cookie->bucket);
        } else {
            min_out = std::min(min_out, v.cookie->bucket);
        }
    }
    EXPECT_EQ(admitted, 3);
    EXPECT_LE(max_in, min_out);  // the draw decided, not who came first
    visitor late;
    EXPECT_EQ(h.visit(late).what, action::queue);
    EXPECT_GT(late.cookie->bucket, *std::max_element(buckets.begin(), buckets.end()));
}

TEST(Events, EventLimitsOverrideTheRoomUntilTheEnd) {
    harness h({event_room(minute_start(), false)});
    h.set_time_ms(minute_start() + 20 * 60'000);
    h.sync();
    std::vector<visitor> vs(4);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(h.visit(vs[i]).what, action::admit);
    }
    EXPECT_EQ(h.visit(vs[3]).what, action::queue);  // event limit 3, room limit 100
    h.set_time_ms(minute_start() + 60 * 60'000);
    h.sync();
    visitor after;
    auto d = h.visit(after);
    EXPECT_EQ(d.what, action::admit);
    EXPECT_EQ(after.cookie->event_id, 0u);
}

TEST(Events, EventCanSuspendTheRoom) {
    auto r = event_room(minute_start(), false);
    r.events[0].suspended = true;
    harness h({r});
    h.set_time_ms(minute_start() + 30 * 60'000);
    h.sync();
    visitor v;
    EXPECT_EQ(h.visit(v).what, action::pass);
    EXPECT_FALSE(v.cookie);
}

TEST(Events, EventIdIsStableAndNeverZero) {
    config::event a;
    a.name = "launch";
    config::event b;
    b.name = "launch";
    EXPECT_EQ(event_id_of(a), event_id_of(b));
    EXPECT_NE(event_id_of(a), 0u);
    b.name = "other";
    EXPECT_NE(event_id_of(a), event_id_of(b));
}

}  // namespace
}  // namespace waitroom::room

namespace waitroom::room {
namespace {

// An event with a shorter session_duration counts admitted visitors in finer windows: a visitor
// admitted before it, back after its start, is moved out of the window it was counted in (of the
// room's size), not out of one of the event's size it was never in. (Counted twice until the old
// window lapsed, a full room admitted nobody for about two minutes from the event's start.)
TEST(Events, AnEventWithAShorterSessionCountsTheVisitorsAdmittedBeforeItOnce) {
    auto r = make_room("launch", 100, 1000);
    r.session_duration = 10min;
    config::event ev;
    ev.name = "short";
    auto at = [](std::int64_t ms) { return config::time_point{std::chrono::milliseconds{ms}}; };
    ev.event_start_time = at(minute_start() + 5 * 60'000);
    ev.event_end_time = at(minute_start() + 60 * 60'000);
    ev.session_duration = std::chrono::minutes{2};
    r.events.push_back(ev);
    harness h({r});
    // Admitted 3 s before the start, in the middle of a 10 s window (not on a 2 s boundary).
    h.set_time_ms(minute_start() + 5 * 60'000 - 3'000);
    std::vector<visitor> in(50);
    for (auto& v : in) {
        ASSERT_EQ(h.visit(v).what, action::admit);
    }
    h.sync();
    ASSERT_EQ(h.state("launch").counts().active, 50);
    h.set_time_ms(minute_start() + 5 * 60'000 + 3'000);  // the event runs
    for (auto& v : in) {
        ASSERT_EQ(h.visit(v).what, action::admit);
    }
    h.sync();
    EXPECT_EQ(h.state("launch").counts().active, 50);
    h.advance(30s);
    h.sync();
    EXPECT_EQ(h.state("launch").counts().active, 50);
}

}  // namespace
}  // namespace waitroom::room
