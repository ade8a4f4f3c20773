// engine::standing, which picks among several cookies of a room in one request: it must rank a
// cookie exactly as decide() would treat it, so a planted cookie can never cost a visitor a
// session or a place in the queue.
#include <gtest/gtest.h>

#include "room/harness.hpp"

namespace waitroom::room {
namespace {

using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;
using namespace std::chrono_literals;

constexpr std::int64_t window_ms = 10'000;

// A room with one slot, held by `first`; `second` and `third` queue in later windows.
struct full_room {
    harness h{{make_room("shop", 1, 100)}};
    visitor first, second, third;

    full_room() {
        EXPECT_EQ(h.visit(first).what, action::admit);
        h.advance(20s);
        h.sync();
        EXPECT_EQ(h.visit(second).what, action::queue);
        h.advance(20s);
        h.sync();
        EXPECT_EQ(h.visit(third).what, action::queue);
    }
    const compiled_room& room() { return h.engine().rooms().front(); }
    cookie_standing standing(const visitor& v) {
        return h.engine().standing(room(), h.worker(), *v.cookie, h.now());
    }
};

TEST(CookieStanding, LiveSessionStandsAboveAnyPlaceInTheQueue) {
    full_room r;
    EXPECT_EQ(r.standing(r.first).tier, 2);
    EXPECT_EQ(r.standing(r.second).tier, 1);
    EXPECT_GT(r.standing(r.first), r.standing(r.second));
}

TEST(CookieStanding, OlderPlaceInTheQueueStandsAboveANewerOne) {
    full_room r;
    ASSERT_LT(r.second.cookie->bucket, r.third.cookie->bucket);
    EXPECT_GT(r.standing(r.second), r.standing(r.third));
}

TEST(CookieStanding, EndedSessionIsWorthLessThanAPlaceInTheQueue) {
    full_room r;
    cookie::payload ended = *r.first.cookie;
    ended.last_check_in = r.h.now() - 10 * 60'000;  // silent for ten minutes: session over
    ended.accepted_at = ended.last_check_in;
    EXPECT_EQ(r.h.engine().standing(r.room(), r.h.worker(), ended, r.h.now()), cookie_standing{});
    EXPECT_GT(r.standing(r.third), r.h.engine().standing(r.room(), r.h.worker(), ended, r.h.now()));
    // decide() agrees: the ended session queues its holder at the back, as a new arrival.
    r.h.advance(20s);
    r.h.sync();
    visitor holder{ended};
    auto d = r.h.visit(holder);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_GT(holder.cookie->bucket, r.third.cookie->bucket);
}

// A revoked session's cookie, planted ahead of a visitor's own, must not make them a new arrival.
TEST(CookieStanding, RevokedSessionsCookieIsWorthNothingBeforeAndAfterTheSync) {
    auto shop = make_room("shop", 2, 100);
    shop.revoke_enabled = true;
    harness h{{shop}};
    visitor revoked, own;
    ASSERT_EQ(h.visit(revoked).what, action::admit);
    ASSERT_EQ(h.visit(own).what, action::admit);
    const compiled_room& room = h.engine().rooms().front();
    const cookie::payload old = *revoked.cookie;
    EXPECT_EQ(h.engine().standing(room, h.worker(), old, h.now()).tier, 2);
    h.revoke(revoked);
    EXPECT_EQ(h.engine().standing(room, h.worker(), old, h.now()), cookie_standing{});
    h.advance(1s);
    h.sync();
    EXPECT_EQ(h.engine().standing(room, h.worker(), old, h.now()), cookie_standing{});
    EXPECT_GT(h.engine().standing(room, h.worker(), *own.cookie, h.now()),
              h.engine().standing(room, h.worker(), old, h.now()));
    EXPECT_GT(h.engine().standing(room, h.worker(), *revoked.cookie, h.now()),
              h.engine().standing(room, h.worker(), old, h.now()))
        << "the revoke's own cookie keeps a place in the queue";
}

TEST(CookieStanding, QueuedCookieSilentPastTheRejoinTimeIsWorthNothing) {
    full_room r;
    cookie::payload gone = *r.second.cookie;
    r.h.advance(11min);
    EXPECT_EQ(r.h.engine().standing(r.room(), r.h.worker(), gone, r.h.now()), cookie_standing{});
}

TEST(CookieStanding, CookieFromTheFutureOrForAnotherRoomIsWorthNothing) {
    full_room r;
    cookie::payload future = *r.second.cookie;
    future.bucket = r.h.now() + 2 * window_ms;
    EXPECT_EQ(r.h.engine().standing(r.room(), r.h.worker(), future, r.h.now()), cookie_standing{});
    cookie::payload other = *r.first.cookie;
    other.room = "other";
    EXPECT_EQ(r.h.engine().standing(r.room(), r.h.worker(), other, r.h.now()), cookie_standing{});
}

}  // namespace
}  // namespace waitroom::room
