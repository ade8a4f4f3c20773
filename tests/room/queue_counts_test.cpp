// The queue counts distinct tickets, decided in the store: a new visitor is counted once it
// comes back with the cookie it was given, copies of one cookie on several nodes are one
// visitor, a `random` room's free place goes to a ticket holder whatever the count, and a flag
// refuses the earlier ticket on every node.

#include <gtest/gtest.h>

#include "harness.hpp"

namespace waitroom::room_testing {
namespace {

using room::action;
using room::visitor_flags::flagged;

std::int64_t waiting(harness& h) {
    return h.state("shop").waiting_total();
}

TEST(QueueCounts, ANewVisitorIsCountedOnlyOnceItComesBackWithTheCookieItWasGiven) {
    harness h({make_room("shop", 1, 1000)});
    visitor holder;
    ASSERT_EQ(h.visit(holder).what, action::admit);
    for (int i = 0; i < 20; ++i) {
        visitor bot;  // cookieless, every time
        ASSERT_EQ(h.visit_once(bot).what, action::queue);
    }
    visitor v;
    auto first = h.visit_once(v);
    ASSERT_EQ(first.what, action::queue);
    EXPECT_LE(first.refresh_seconds, 2) << "told to come back soon, to be counted";
    h.sync();
    EXPECT_EQ(waiting(h), 0) << "no request without a ticket is counted";
    h.advance(std::chrono::seconds{first.refresh_seconds});
    ASSERT_EQ(h.visit_once(v).what, action::queue);
    h.sync();
    EXPECT_EQ(waiting(h), 1);
}

TEST(QueueCounts, CopiesOfOneQueuedCookieOnTwoNodesInEveryWindowCountAsOneVisitor) {
    harness a({make_room("shop", 1, 1000)});
    harness b(a, "node-b");
    visitor holder;
    ASSERT_EQ(a.visit(holder).what, action::admit);
    visitor v;
    ASSERT_EQ(a.visit(v).what, action::queue);
    a.advance(2s);
    b.set_time_ms(a.now());
    ASSERT_EQ(a.visit(v).what, action::queue);
    const cookie::payload kept = *v.cookie;
    for (int window = 0; window < 3; ++window) {
        a.advance(10s);
        b.set_time_ms(a.now());
        for (int i = 0; i < 5; ++i) {
            visitor copy_a{kept};
            visitor copy_b{kept};
            a.visit(copy_a);
            b.visit(copy_b);
        }
        a.sync();
        b.sync();
        a.sync();
        EXPECT_EQ(waiting(a), 1) << "window " << window;
        EXPECT_EQ(waiting(b), 1) << "window " << window;
    }
}

// Fifty tickets came back once and stopped (each counted until its windows lapse, 35 s): the
// draws of the one visitor who keeps refreshing are one in fifty-one. Once the freed place has
// stayed free for a refresh, that visitor's next refresh takes it.
TEST(QueueCounts, ARandomRoomGivesAPlaceNobodyTookForARefreshToTheNextTicketHolder) {
    auto room = make_room("shop", 1, 1000);
    room.method = config::queueing_method::random;
    room.refresh_interval = std::chrono::seconds{10};
    room.revoke_enabled = true;
    harness h({room});
    visitor holder;
    ASSERT_EQ(h.visit(holder).what, action::admit);
    for (int i = 0; i < 50; ++i) {
        visitor ghost;
        h.visit(ghost);  // back once with its cookie, then never again
    }
    visitor real;
    h.visit(real);
    h.sync();
    ASSERT_EQ(waiting(h), 51);
    h.revoke(holder);
    h.sync();
    const std::int64_t freed = h.now();
    std::int64_t due = h.now();
    std::int64_t admitted_at = -1;
    while (admitted_at < 0 && h.now() - freed < 40'000) {
        h.advance(1s);
        h.sync();
        if (h.now() >= due) {
            auto d = h.visit(real);
            if (d.what == action::admit) {
                admitted_at = h.now();
            } else {
                due = h.now() + d.refresh_seconds * 1000;
            }
        }
    }
    ASSERT_GE(admitted_at, 0) << "never admitted";
    EXPECT_LT(admitted_at - freed, 25'000) << "the place sat idle while a ticket holder waited";
    EXPECT_GT(waiting(h), 40) << "the stale tickets still counted: the hold, not their lapse";
}

TEST(QueueCounts, AFlaggedVisitorsEarlierTicketIsRefusedOnEveryNode) {
    auto room = make_room("shop", 1, 1000);
    room.abuse = config::abuse_action::infinite_queue;
    harness a({room});
    harness b(a, "node-b");
    visitor holder;
    ASSERT_EQ(a.visit(holder).what, action::admit);
    visitor bot;
    ASSERT_EQ(a.visit(bot).what, action::queue);
    a.advance(2s);
    ASSERT_EQ(a.visit(bot).what, action::queue);
    const cookie::payload pre_flag = *bot.cookie;
    bool flagged_now = false;
    for (int i = 0; i < 400 && !flagged_now; ++i) {
        a.advance(50ms);
        flagged_now = a.visit(bot).flagged_now;
    }
    ASSERT_TRUE(flagged_now);
    ASSERT_NE(bot.cookie->flags & flagged, 0u);
    a.sync();
    b.set_time_ms(a.now());
    b.sync();
    visitor replay{pre_flag};
    auto d = b.visit(replay);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_NE(replay.cookie->ticket, pre_flag.ticket) << "node b kept the earlier ticket's place";
    EXPECT_EQ(replay.cookie->bucket, b.now() - b.now() % 10'000) << "a new arrival's bucket";
}

}  // namespace
}  // namespace waitroom::room_testing
