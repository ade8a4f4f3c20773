// The refresh-rate watch (abuse_action): a queued visitor refreshing far faster than its Refresh
// is flagged in its cookie, and the room's action applies: log, slow or infinite_queue. What a
// bot can send to get in first or stay in: a flood, a cookie kept back from before its flag,
// no cookie at all.

#include <gtest/gtest.h>

#include <vector>

#include "room/harness.hpp"

namespace waitroom::room {
namespace {

using namespace std::chrono_literals;
using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;

constexpr std::int64_t window_ms = 10'000;

bool is_flagged(const visitor& v) {
    return v.cookie && (v.cookie->flags & visitor_flags::flagged) != 0;
}

std::int64_t given_refresh_s(const visitor& v) {
    return static_cast<std::int64_t>(v.cookie->flags >> visitor_flags::refresh_shift);
}

// The requests a minute may hold before the next flags: five times what Refresh allows.
std::int64_t allowed_per_minute(std::int64_t refresh_s) {
    return 5 * ((60 + refresh_s - 1) / refresh_s);
}

// A full room of one (`in` admitted) with `early` queued at the front (told to come back in a
// few seconds) and, a window later, `late` queued behind (told the room's 20 s). The origin may
// revoke, which frees `in`'s place on demand.
struct queue_of_two {
    explicit queue_of_two(config::abuse_action action) : h({room(action)}) {
        EXPECT_EQ(h.visit(in).what, action::admit);
        EXPECT_EQ(h.visit(early).what, action::queue);
        h.advance(10s);
        h.sync();
        EXPECT_EQ(h.visit(late).what, action::queue);
        EXPECT_LT(early.cookie->bucket, late.cookie->bucket);
        EXPECT_LT(given_refresh_s(early), 20);
        EXPECT_EQ(given_refresh_s(late), 20);
    }
    static config::room room(config::abuse_action action) {
        auto r = make_room("shop", 1, 1000);
        r.revoke_enabled = true;
        r.abuse = action;
        return r;
    }
    // `v` sends `n` requests `every` apart; returns how many of them flagged it.
    int flood(visitor& v, std::int64_t n, std::chrono::milliseconds every) {
        int flagged_now = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            h.advance(every);
            auto d = h.visit(v);
            EXPECT_EQ(d.what, action::queue) << "flood request " << i;
            flagged_now += d.flagged_now ? 1 : 0;
        }
        return flagged_now;
    }
    // Twenty times faster than `v`'s Refresh.
    static std::chrono::milliseconds too_fast(const visitor& v) {
        return std::chrono::milliseconds{given_refresh_s(v) * 1000 / 20};
    }
    // `v` floods at twenty times its Refresh until flagged: the request that flags it is the
    // first past five times what Refresh allows (the one that queued it was the first of the
    // minute), well within the minute.
    void flood_until_flagged(visitor& v) {
        const auto every = too_fast(v);
        const std::int64_t allowed = allowed_per_minute(given_refresh_s(v));
        EXPECT_EQ(flood(v, allowed - 1, every), 0);
        EXPECT_FALSE(is_flagged(v));
        EXPECT_EQ(flood(v, 1, every), 1);
        EXPECT_TRUE(is_flagged(v));
        EXPECT_LT((allowed + 1) * every.count(), 60'000);
    }
    // `v` comes back exactly when its last answer asked, until `until_ms`; returns the last
    // decision.
    decision polite_until(visitor& v, std::int64_t until_ms) {
        decision d;
        std::int64_t refresh_s = given_refresh_s(v);
        while (h.now() + refresh_s * 1000 <= until_ms) {
            h.advance(std::chrono::seconds{refresh_s});
            h.sync();
            d = h.visit(v);
            EXPECT_FALSE(d.flagged_now);
            if (d.what != action::queue) {
                break;
            }
            refresh_s = d.refresh_seconds;
        }
        return d;
    }
    harness h;
    visitor in, early, late;
};

TEST(Abuse, WithAbuseActionOffAFloodLeavesNoMarkInTheCookie) {
    queue_of_two q(config::abuse_action::off);
    const auto before = q.late.cookie;
    EXPECT_EQ(q.flood(q.late, 18, 1s), 0);
    EXPECT_EQ(q.late.cookie, before) << "early refreshes set no cookie";
    EXPECT_EQ(q.flood(q.early, 200, 150ms), 0);
    EXPECT_EQ(q.early.cookie->flood_since, 0);
    EXPECT_EQ(q.early.cookie->flood_count, 0u);
    EXPECT_FALSE(is_flagged(q.early));
}

TEST(Abuse, AVisitorRefreshingTwentyTimesTooFastIsFlaggedOnceWithinAMinute) {
    queue_of_two q(config::abuse_action::log);
    // Refresh 20 s allows 3 requests a minute; five times that is 15: the 16th flags (the
    // request that queued it was the first).
    EXPECT_EQ(q.flood(q.late, 14, 1s), 0);
    EXPECT_FALSE(is_flagged(q.late));
    EXPECT_EQ(q.late.cookie->flood_count, 15u);
    EXPECT_EQ(q.flood(q.late, 1, 1s), 1);
    EXPECT_TRUE(is_flagged(q.late));
    EXPECT_EQ(q.flood(q.late, 60, 1s), 0) << "flagged once, not at every request";
    EXPECT_TRUE(is_flagged(q.late));
}

TEST(Abuse, TheFrontOfTheQueueIsHeldToFiveTimesItsShorterRefresh) {
    queue_of_two q(config::abuse_action::log);
    q.flood_until_flagged(q.early);
}

TEST(Abuse, FiveTimesTooFastIsNotYetAFlood) {
    queue_of_two q(config::abuse_action::infinite_queue);
    const std::int64_t refresh_ms = given_refresh_s(q.early) * 1000;
    // Exactly five times the Refresh, for three minutes: never more than allowed in a minute.
    EXPECT_EQ(
        q.flood(q.early, 5 * 3 * 60'000 / refresh_ms, std::chrono::milliseconds{refresh_ms / 5}),
        0);
    EXPECT_FALSE(is_flagged(q.early));
    // A little faster, and a minute holds one request too many.
    EXPECT_EQ(q.flood(q.early, 60'000 * 11 / 2 / refresh_ms,
                      std::chrono::milliseconds{refresh_ms * 2 / 11}),
              1);
}

TEST(Abuse, AVisitorWhoFollowsRefreshOrPressesReloadAFewTimesIsNeverFlagged) {
    queue_of_two q(config::abuse_action::infinite_queue);
    // Ten minutes of following Refresh, with a burst of five reloads every minute.
    std::int64_t refresh_s = 20;
    for (int minute = 0; minute < 10; ++minute) {
        for (int i = 0; i < 5; ++i) {
            q.h.advance(1s);
            EXPECT_FALSE(q.h.visit(q.late).flagged_now);
        }
        auto d = q.polite_until(q.late, q.h.now() + 55'000);
        refresh_s = d.refresh_seconds;
    }
    EXPECT_FALSE(is_flagged(q.late));
    q.h.revoke(q.in);
    q.h.advance(std::chrono::seconds{refresh_s});
    q.h.sync();
    // `early` stopped refreshing long ago and lost its place; `late` is at the front.
    EXPECT_EQ(q.h.visit(q.late).what, action::admit);
}

TEST(Abuse, InfiniteQueueNeverAdmitsAFlaggedVisitorWhileThePoliteOneBehindGetsIn) {
    queue_of_two q(config::abuse_action::infinite_queue);
    q.flood_until_flagged(q.early);
    const std::int64_t start = q.h.now();
    q.h.sync();
    // The flagged visitor's place in the counts lapses with its last counted window (its
    // check-ins move no count): for a refresh or two the polite visitor still waits behind it.
    q.h.revoke(q.in);  // a place is free
    q.h.sync();
    // The flood goes on at one request a second; the polite visitor comes when told.
    bool late_in = false;
    std::int64_t late_due = q.late.cookie->last_check_in + 20'000;
    while (q.h.now() < start + 120'000) {
        q.h.advance(1s);
        auto d = q.h.visit(q.early);
        ASSERT_EQ(d.what, action::queue) << "flagged visitor admitted at " << q.h.now() - start;
        EXPECT_GT(d.refresh_seconds, 0);
        EXPECT_FALSE(d.page.queue_all);
        if (!late_in && q.h.now() >= late_due) {
            q.h.sync();
            auto l = q.h.visit(q.late);
            late_in = l.what == action::admit;
            late_due = q.h.now() + l.refresh_seconds * 1000;
        }
        if (q.h.now() % 5000 == 0) {
            q.h.sync();
        }
    }
    EXPECT_TRUE(late_in) << "the polite visitor behind the flagged one got in";
    EXPECT_TRUE(is_flagged(q.early));
}

TEST(Abuse, AFlaggedVisitorNeverGetsInThroughAnEmptyRoom) {
    queue_of_two q(config::abuse_action::infinite_queue);
    q.flood_until_flagged(q.early);
    q.h.revoke(q.in);
    q.h.advance(2min);  // `late` left; the room is empty
    q.h.sync();
    EXPECT_EQ(q.h.state("shop").waiting_total(), 0);
    for (int i = 0; i < 30; ++i) {
        q.h.advance(1s);
        EXPECT_EQ(q.h.visit(q.early).what, action::queue) << i;
    }
}

TEST(Abuse, ACookieKeptBackFromBeforeTheFlagIsANewArrivalAtTheBack) {
    queue_of_two q(config::abuse_action::infinite_queue);
    const auto every = queue_of_two::too_fast(q.early);
    const std::int64_t allowed = allowed_per_minute(given_refresh_s(q.early));
    EXPECT_EQ(q.flood(q.early, allowed - 6, every), 0);
    const visitor before_flag = q.early;  // unflagged, still holding the oldest place
    EXPECT_EQ(q.flood(q.early, 6, every), 1);
    ASSERT_TRUE(is_flagged(q.early));
    q.h.advance(10s);
    // On this worker at once and, after the sync, on every node: the kept-back cookie's ticket
    // is refused. Its holder joins at the back with a new ticket: what dropping the cookie gets.
    for (int i = 0; i < 2; ++i) {
        visitor replay = before_flag;
        auto d = q.h.visit(replay);
        EXPECT_EQ(d.what, action::queue) << i;
        EXPECT_EQ(d.cookie.bucket, floor_to(q.h.now(), window_ms)) << i;
        EXPECT_GT(d.cookie.bucket, q.late.cookie->bucket) << i;
        EXPECT_NE(d.cookie.ticket, before_flag.cookie->ticket) << i;
        EXPECT_FALSE(is_flagged(replay)) << i;
        q.h.sync();
    }
    // The flagged cookie itself stays flagged.
    EXPECT_EQ(q.h.visit(q.early).what, action::queue);
    EXPECT_TRUE(is_flagged(q.early));
}

// The worker refuses a revoked session's ticket at once, before the store's list reaches it:
// flagging many visitors on that worker must not push it out (the flags' own tickets go to a ring
// of their own), or the revoked session's cookie would pass again until the next sync.
TEST(Abuse, MassFlaggingOnAWorkerDoesNotBringBackASessionItRevoked) {
    auto r = make_room("shop", 2, 1000);
    r.revoke_enabled = true;
    r.abuse = config::abuse_action::infinite_queue;
    harness h({r});
    visitor x;
    ASSERT_EQ(h.visit(x).what, action::admit);
    const visitor revoked = x;  // the session's cookie, kept back
    h.revoke(x);
    // Everyone new queues from here (no slot, so no top-up: nothing reaches the store), and the
    // worker flags more visitors than its ring of refused tickets holds (64).
    h.cfg().rooms[0].queue_all = true;
    h.reload();
    const int top_ups = h.top_ups();
    for (int i = 0; i < 100; ++i) {
        visitor bot;
        ASSERT_EQ(h.visit(bot).what, action::queue);
        const std::int64_t allowed = allowed_per_minute(given_refresh_s(bot));
        bool flagged = false;
        for (std::int64_t n = 0; n <= allowed && !flagged; ++n) {
            h.advance(10ms);
            flagged = h.visit(bot).flagged_now;
        }
        ASSERT_TRUE(flagged) << "bot " << i;
    }
    ASSERT_EQ(h.top_ups(), top_ups);
    visitor replay = revoked;
    EXPECT_NE(h.visit(replay).what, action::admit) << "the revoked session passed again";
}

TEST(Abuse, AFloodWithoutACookieIsANewArrivalEveryTime) {
    queue_of_two q(config::abuse_action::infinite_queue);
    for (int i = 0; i < 50; ++i) {
        visitor bot;  // drops every cookie
        auto d = q.h.visit_once(bot);
        EXPECT_EQ(d.what, action::queue);
        EXPECT_EQ(d.cookie.bucket, floor_to(q.h.now(), window_ms));
        EXPECT_EQ(d.cookie.flood_count, 0u) << "the watch begins with a request with the cookie";
    }
}

TEST(Abuse, SlowStretchesTheRefreshAndDrawsOnlyWhenItIsDue) {
    queue_of_two q(config::abuse_action::slow);
    q.flood_until_flagged(q.early);
    // The next due request is told to come back five times later than the room's 20 s.
    q.h.advance(20s);
    q.h.sync();
    auto d = q.h.visit(q.early);
    ASSERT_EQ(d.what, action::queue);
    EXPECT_EQ(d.refresh_seconds, 100);
    EXPECT_EQ(d.page.refresh_interval_seconds, 100);
    const std::int64_t due = q.early.cookie->last_check_in + 100'000;
    q.h.revoke(q.in);  // a place frees
    q.h.sync();
    // Before then it draws nothing, however often it comes, and its window lapses meanwhile.
    while (q.h.now() + 2000 < due) {
        q.h.advance(2s);
        auto e = q.h.visit(q.early);
        ASSERT_EQ(e.what, action::queue) << "admitted " << due - q.h.now() << " ms early";
        EXPECT_FALSE(e.cookie_changed);
    }
    q.h.set_time_ms(due);
    q.h.sync();
    EXPECT_EQ(q.h.visit(q.early).what, action::admit) << "its place is kept; the draw is due";
}

TEST(Abuse, LogFlagsAndCountsButAdmitsAsUsual) {
    queue_of_two q(config::abuse_action::log);
    q.flood_until_flagged(q.early);
    q.h.revoke(q.in);
    q.h.advance(20s);
    q.h.sync();
    EXPECT_EQ(q.h.visit(q.early).what, action::admit) << "the oldest place goes first, as ever";
}

}  // namespace
}  // namespace waitroom::room
