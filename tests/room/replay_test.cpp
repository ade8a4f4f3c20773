// Replays of one cookie against the counting rules: copies of an admitted cookie checking in
// from an older window, a revoke answered to the same cookie many times, what the old admitted
// cookie and the revoke's cookie can do afterwards, copies of a queued cookie whose place was
// spent, copies of a due queued cookie (counted once), and early refreshes (one draw per
// interval, none for a cookieless request).

#include <gtest/gtest.h>

#include <vector>

#include "room/harness.hpp"

namespace waitroom::room {
namespace {

using namespace std::chrono_literals;
using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;

// A room whose origin may revoke sessions.
config::room revoking_room(std::uint32_t total_active_users) {
    auto r = make_room("shop", total_active_users, 1000);
    r.revoke_enabled = true;
    return r;
}

std::int64_t active(harness& h) {
    h.sync();
    return h.state("shop").counts().active;
}

TEST(Replay, CopiesOfOneAdmittedCookieFromAnOlderWindowNeverUncountTheOthers) {
    harness h({make_room("shop", 100, 1000)});
    std::vector<visitor> in(5);
    for (auto& v : in) {
        ASSERT_EQ(h.visit(v).what, action::admit);
    }
    ASSERT_EQ(active(h), 5);
    h.advance(10s);  // the next window: each copy does +1 here and −1 in the first window
    std::vector<visitor> copies(20, in[0]);
    for (auto& c : copies) {
        ASSERT_EQ(h.visit(c).what, action::admit);
    }
    // The four others move on too: the first window is now 5 − 20 − 4 below zero.
    for (std::size_t i = 1; i < in.size(); ++i) {
        ASSERT_EQ(h.visit(in[i]).what, action::admit);
    }
    // Twenty holders of the one cookie and the four others all pass: each copy is counted in
    // the window it moved to, and the −1s beyond the five counted in the first window are lost
    // at the floor instead of cancelling the others.
    EXPECT_EQ(active(h), 24);
}

TEST(Replay, CopiesOfOneAdmittedCookieNeverLetTheRoomOverfill) {
    harness h({make_room("shop", 5, 1000)});
    std::vector<visitor> in(5);
    for (auto& v : in) {
        ASSERT_EQ(h.visit(v).what, action::admit);
    }
    h.advance(10s);
    std::vector<visitor> copies(10, in[0]);
    for (auto& c : copies) {
        ASSERT_EQ(h.visit(c).what, action::admit);
    }
    ASSERT_GE(active(h), 5);
    for (int i = 0; i < 5; ++i) {
        visitor newcomer;
        EXPECT_EQ(h.visit(newcomer).what, action::queue) << "newcomer " << i;
    }
}

TEST(Replay, RevokeAnsweredToOneCookieManyTimesEndsOneSession) {
    harness h({revoking_room(5)});
    std::vector<visitor> in(5);
    for (auto& v : in) {
        ASSERT_EQ(h.visit(v).what, action::admit);
    }
    ASSERT_EQ(active(h), 5);
    // The same admitted cookie sent 20 times, the origin answering revoke to each. The answers
    // reach the store over several syncs.
    std::vector<visitor> copies(20, in[0]);
    for (auto& c : copies) {
        ASSERT_EQ(h.visit(c).what, action::admit);
    }
    for (std::size_t i = 0; i < copies.size(); ++i) {
        h.revoke(copies[i]);
        if (i % 7 == 0) {
            EXPECT_EQ(active(h), 4) << "after revoke " << i;
        }
    }
    EXPECT_EQ(active(h), 4);
    h.advance(10s);
    EXPECT_EQ(active(h), 4);
    // One place is free, and only one; further replays of the cookie are new visitors.
    visitor a, b, replay = in[0];
    EXPECT_EQ(h.visit(a).what, action::admit);
    EXPECT_EQ(h.visit(b).what, action::queue);
    EXPECT_EQ(h.visit(replay).what, action::queue);
    EXPECT_EQ(active(h), 5);
}

TEST(Replay, RevokedSessionsOldCookieAdmitsNoMoreOnThisWorkerOrAfterTheSync) {
    harness h({revoking_room(1)});
    visitor v, w;
    ASSERT_EQ(h.visit(v).what, action::admit);
    const visitor old = v;
    h.revoke(v);
    visitor replay = old;  // before any sync: the worker's own record refuses it
    auto d = h.visit(replay);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_NE(d.cookie.ticket, old.cookie->ticket);
    h.advance(1s);
    h.sync();
    ASSERT_EQ(h.visit(w).what, action::admit);  // the freed place
    for (int i = 0; i < 3; ++i) {
        h.advance(5s);
        h.sync();  // now the store's answer refuses it, as it does on every node
        replay = old;
        d = h.visit(replay);
        EXPECT_EQ(d.what, action::queue) << i;
        EXPECT_NE(d.cookie.ticket, old.cookie->ticket);
    }
    EXPECT_EQ(active(h), 1);
}

// Remembered for the longer of the session and the rejoin time (10 min), plus two windows.
TEST(Replay, RevokedTicketsAreForgottenOnceNoCookieCanComeBackWithThem) {
    auto r = revoking_room(10);
    r.session_duration = 1min;
    harness h({r});
    visitor v;
    ASSERT_EQ(h.visit(v).what, action::admit);
    h.revoke(v);
    h.sync();
    ASSERT_EQ(h.state("shop").counts().revoked.size(), 1u);
    h.advance(10min + 15s);
    h.sync();
    EXPECT_EQ(h.state("shop").counts().revoked.size(), 1u);
    h.advance(10s);
    h.sync();
    EXPECT_TRUE(h.state("shop").counts().revoked.empty());
}

TEST(Replay, RevokesCookieIsANewArrivalThatAgesLikeAnyQueuedCookie) {
    harness h({revoking_room(1)});
    visitor v, holder;
    ASSERT_EQ(h.visit(v).what, action::admit);
    h.revoke(v);
    const std::int64_t revoked_at = h.now();
    EXPECT_EQ(v.cookie->accepted_at, 0);
    EXPECT_EQ(v.cookie->last_check_in, revoked_at);
    h.advance(1s);
    h.sync();
    ASSERT_EQ(h.visit(holder).what, action::admit);
    // Held back past the rejoin time (10 minutes) while the room stays full, it is no place in
    // the queue: it starts over at the back, with a new arrival bucket.
    for (int i = 0; i < 40; ++i) {
        h.advance(20s);
        h.sync();
        ASSERT_EQ(h.visit(holder).what, action::admit);
    }
    auto d = h.visit(v);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_EQ(d.cookie.bucket, floor_to(h.now(), 10'000));
    EXPECT_GT(d.cookie.bucket, floor_to(revoked_at, 10'000));
}

TEST(Replay, RevokesCookieHeldBackPastAPrequeueStartDoesNotStandAheadOfThePrequeued) {
    auto r = revoking_room(1);
    const std::int64_t t0 = harness({r}).now();
    config::event ev;
    ev.name = "launch";
    auto at = [&](std::int64_t ms) { return config::time_point{std::chrono::milliseconds{ms}}; };
    ev.prequeue_start_time = at(t0 + 5 * 60'000);
    ev.event_start_time = at(t0 + 15 * 60'000);
    ev.event_end_time = at(t0 + 60 * 60'000);
    ev.shuffle_at_event_start = true;
    r.events.push_back(ev);
    harness h({r});
    visitor v;
    ASSERT_EQ(h.visit(v).what, action::admit);
    h.advance(4min);
    h.sync();
    ASSERT_EQ(h.visit(v).what, action::admit);
    h.revoke(v);  // a minute before the prequeue
    h.advance(2min);
    h.sync();
    auto d = h.visit(v);
    ASSERT_EQ(d.what, action::queue);
    EXPECT_TRUE(d.page.is_event_prequeueing);
    // Drawn into the prequeue span like everyone prequeued, not ahead of it.
    EXPECT_GE(d.cookie.bucket, t0 + 5 * 60'000);
    EXPECT_LT(d.cookie.bucket, t0 + 15 * 60'000);
    EXPECT_EQ(d.cookie.event_id, event_id_of(ev));
}

// A room that queued `v` while queue_all was on, then lets visitors in again: capacity is free
// and `v`'s next refresh is due `refresh` seconds after its last one.
struct reopened_room {
    explicit reopened_room(config::queueing_method method) : h({room(method)}) {
        h.cfg().rooms[0].queue_all = true;
        h.reload();
        auto d = h.visit(v);
        EXPECT_EQ(d.what, action::queue);
        refresh = d.refresh_seconds;
        h.cfg().rooms[0].queue_all = false;
        h.reload();
        h.sync();
    }
    static config::room room(config::queueing_method method) {
        auto r = make_room("shop", 10, 1000);
        r.method = method;
        return r;
    }
    harness h;
    visitor v;
    std::int64_t refresh = 0;
};

// An early refresh is answered from the cookie alone: no draw, no slot, no top-up, no delta.
void expect_early_refresh_is_free(harness& h, visitor& v, const char* what) {
    h.sync();
    const auto before_cookie = v.cookie;
    const rng before_rng = h.rng();
    const int top_ups = h.top_ups();
    auto d = h.visit(v);
    EXPECT_EQ(d.what, action::queue) << what;
    EXPECT_FALSE(d.cookie_changed) << what;
    EXPECT_EQ(v.cookie, before_cookie) << what;
    EXPECT_TRUE(h.rng() == before_rng) << what << ": a lottery draw or a new ticket";
    EXPECT_EQ(h.top_ups(), top_ups) << what;
    EXPECT_GE(d.refresh_seconds, 1) << what;
    h.worker().flush();
    auto deltas = h.node().take_deltas();
    EXPECT_TRUE(deltas["shop"].empty()) << what << ": counters moved";
}

// A full room of one, `in` admitted and `q` queued behind it; then `in`'s place is freed.
struct spent_place {
    spent_place() : h({revoking_room(1)}) {
        EXPECT_EQ(h.visit(in).what, action::admit);
        EXPECT_EQ(h.visit(q).what, action::queue);
        h.revoke(in);  // the origin ends `in`'s session: one place is free
        h.advance(5s);
        h.sync();
    }
    harness h;
    visitor in, q;
};

TEST(Replay, AQueuedCookieKeptBackAfterItsAdmissionIsANewArrival) {
    spent_place p;
    const visitor saved = p.q;  // the queued cookie, kept back before its turn came
    ASSERT_EQ(p.h.visit(p.q).what, action::admit);
    EXPECT_NE(p.q.cookie->ticket, saved.cookie->ticket) << "the session has a ticket of its own";
    p.h.advance(10s);  // a later arrival bucket
    // On this worker at once, and from the store's list after the sync: the kept-back copy has
    // no place. Its holder joins at the back, with a new ticket, and is counted once.
    for (int i = 0; i < 3; ++i) {
        visitor copy = saved;
        auto d = p.h.visit(copy);
        EXPECT_EQ(d.what, action::queue) << i;
        EXPECT_NE(d.cookie.ticket, saved.cookie->ticket) << i;
        EXPECT_EQ(d.cookie.bucket, floor_to(p.h.now(), 10'000)) << i;
        EXPECT_GT(d.cookie.bucket, saved.cookie->bucket) << i;
        p.h.advance(3s);
        p.h.sync();
    }
    EXPECT_EQ(p.h.visit(p.q).what, action::admit) << "the admitted session is not refused";
    EXPECT_EQ(active(p.h), 1);
}

// The copies may be requests sent together before any answer (the first admission's answer
// may never go out: the client closes first): the place is spent at the decision, so it is
// never admitted twice, answered or not.
TEST(Replay, CopiesOfOneQueuedCookieAtTheFrontAreAdmittedOnce) {
    auto r = revoking_room(5);
    harness h({r});
    std::vector<visitor> in(5);
    for (auto& v : in) {
        ASSERT_EQ(h.visit(v).what, action::admit);
    }
    visitor q;
    ASSERT_EQ(h.visit(q).what, action::queue);
    h.advance(10s);
    std::vector<visitor> later(3);
    for (auto& v : later) {
        ASSERT_EQ(h.visit(v).what, action::queue);
    }
    for (int i = 0; i < 4; ++i) {
        h.revoke(in[static_cast<std::size_t>(i)]);  // four places free
    }
    h.advance(21s);  // every Refresh given so far is due
    h.sync();
    // Ten copies of `q` come back first: one is admitted; the others join at the back.
    int admitted = 0;
    for (int i = 0; i < 10; ++i) {
        visitor copy = q;
        admitted += h.visit(copy).what == action::admit ? 1 : 0;
    }
    EXPECT_EQ(admitted, 1);
    // The three who queued after `q` take the other places.
    for (auto& v : later) {
        EXPECT_EQ(h.visit(v).what, action::admit);
    }
}

// A bot replaying one due queued cookie many times in a new window is one visitor in the
// waiting counts, not as many as it sends. Counted once per copy, the later buckets saw that many
// ahead of them and, with the copies' counts lapsing window by window, waited on them again and
// again (a queue slowed by a fifth in the attacker review's half-hour replay).
TEST(Replay, CopiesOfOneDueQueuedCookieAreCountedOnceInTheirNewWindow) {
    harness h({make_room("shop", 1, 1000)});
    visitor in;
    ASSERT_EQ(h.visit(in).what, action::admit);
    std::vector<visitor> queued(3);
    for (auto& v : queued) {
        ASSERT_EQ(h.visit(v).what, action::queue);
    }
    h.sync();
    ASSERT_EQ(h.state("shop").waiting_total(), 3);
    h.advance(21s);  // every Refresh given is due, in a later window
    for (int i = 0; i < 20; ++i) {
        visitor copy = queued[0];
        ASSERT_EQ(h.visit(copy).what, action::queue);
    }
    h.sync();
    EXPECT_EQ(h.state("shop").waiting_total(), 3);
}

TEST(Replay, ASpentQueuePlaceStaysRefusedForTheWholeRejoinTime) {
    spent_place p;
    const visitor saved = p.q;
    ASSERT_EQ(p.h.visit(p.q).what, action::admit);
    // A session shorter than the rejoin time (5 min against 10): the refusal outlives it.
    for (int i = 0; i < 29; ++i) {
        p.h.advance(20s);
        p.h.sync();
        p.h.visit(p.q);
    }
    EXPECT_FALSE(p.h.state("shop").counts().revoked.empty());
    visitor copy = saved;  // 9 min 45 s after its last check-in: within the rejoin time
    auto d = p.h.visit(copy);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_GT(d.cookie.bucket, saved.cookie->bucket);
}

// A full random room of five with `waiting` visitors queued, then `freed` of its sessions
// revoked and synced: `freed` places are free while `waiting` wait.
struct random_room {
    random_room(int waiting, int freed) : h({room()}, 3), in(5), queued(waiting) {
        for (auto& v : in) {
            EXPECT_EQ(h.visit(v).what, action::admit);
        }
        for (auto& v : queued) {
            EXPECT_EQ(h.visit(v).what, action::queue);
        }
        for (int i = 0; i < freed; ++i) {
            h.revoke(in[static_cast<std::size_t>(i)]);
        }
        h.advance(5s);
        h.sync();
        EXPECT_EQ(h.state("shop").free_capacity(), freed);
        EXPECT_EQ(h.state("shop").waiting_total(), waiting);
    }
    static config::room room() {
        auto r = revoking_room(5);
        r.method = config::queueing_method::random;
        return r;
    }
    harness h;
    std::vector<visitor> in;
    std::vector<visitor> queued;
};

TEST(Replay, ARandomRoomGivesACookielessRequestNoDrawWhileOthersWait) {
    random_room room(10, 2);
    // A bot without a cookie, a thousand times: queued each time, never drawn (each draw
    // would win with a chance of 2 in 10).
    for (int i = 0; i < 1000; ++i) {
        visitor bot;
        auto d = room.h.visit_once(bot);
        ASSERT_EQ(d.what, action::queue) << i;
        EXPECT_GT(d.refresh_seconds, 0);
    }
}

// A bot that sends one due cookie many times at once (ignoring the cookies it gets back) used to
// get one lottery draw per copy: twenty copies at a chance of 2 in 10 each won almost surely.
// Each copy now draws what the first drew; the next counted refresh draws anew.
TEST(Replay, ARandomRoomGivesCopiesOfOneDueCookieTheSameDraw) {
    random_room room(10, 2);
    room.h.advance(20s);  // every queued visitor is due
    int lost_first = 0;
    for (auto& v : room.queued) {
        const visitor copy = v;
        visitor first = copy;
        if (room.h.visit(first).what == action::admit) {
            continue;  // it won: its place is spent, and copies are new arrivals
        }
        ++lost_first;
        for (int i = 0; i < 20; ++i) {
            visitor again = copy;
            EXPECT_EQ(room.h.visit(again).what, action::queue) << "copy " << i << " won a draw";
        }
    }
    EXPECT_GE(lost_first, 5);
}

TEST(Replay, ARandomRoomWithRoomForEveryoneWaitingAdmitsANewArrival) {
    random_room room(1, 3);
    // Three free places for one waiting visitor: a new arrival has nothing to wait for.
    visitor newcomer;
    EXPECT_EQ(room.h.visit(newcomer).what, action::admit);
}

TEST(EarlyRefresh, RandomRoomGivesOneDrawPerRefreshInterval) {
    reopened_room room(config::queueing_method::random);
    ASSERT_EQ(room.refresh, 20);
    harness& h = room.h;
    for (int s : {1, 5, 12, 18}) {  // 12 s: a later window, still early
        h.set_time_ms(room.v.cookie->last_check_in + s * 1000);
        expect_early_refresh_is_free(h, room.v, "early random refresh");
    }
    h.set_time_ms(room.v.cookie->last_check_in + 20'000);
    EXPECT_EQ(h.visit(room.v).what, action::admit) << "the refresh that is due draws";
}

TEST(EarlyRefresh, FifoEarlyRefreshCostsNoTopUpAndGetsTheQueuePageAgain) {
    reopened_room room(config::queueing_method::fifo);
    harness& h = room.h;
    ASSERT_GE(room.refresh, 3);
    h.set_time_ms(room.v.cookie->last_check_in + 1000);
    const int top_ups = h.top_ups();
    expect_early_refresh_is_free(h, room.v, "early FIFO refresh");
    h.set_time_ms(room.v.cookie->last_check_in + room.refresh * 1000);
    EXPECT_EQ(h.visit(room.v).what, action::admit);
    EXPECT_EQ(h.top_ups(), top_ups + 1) << "the due refresh asked the store for a slot";
}

TEST(EarlyRefresh, EarlyRefreshIsToldWhenToComeBack) {
    reopened_room room(config::queueing_method::random);
    harness& h = room.h;
    h.set_time_ms(room.v.cookie->last_check_in + 15'500);
    auto d = h.visit(room.v);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_EQ(d.refresh_seconds, 5);
    EXPECT_EQ(d.page.refresh_interval_seconds, 5);
}

TEST(EarlyRefresh, EachCountedRefreshDatesTheCookieWithTheRefreshItWasGiven) {
    auto r = make_room("shop", 1, 1000);
    harness h({r});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    auto d = h.visit(v);
    ASSERT_EQ(d.what, action::queue);
    EXPECT_TRUE(d.cookie_changed);
    EXPECT_EQ(v.cookie->last_check_in, h.now());
    EXPECT_EQ(v.cookie->flags >> visitor_flags::refresh_shift,
              static_cast<std::uint32_t>(d.refresh_seconds));
    h.advance(std::chrono::seconds{d.refresh_seconds});
    h.sync();
    auto again = h.visit(v);
    ASSERT_EQ(again.what, action::queue);
    EXPECT_TRUE(again.cookie_changed) << "a counted refresh in the same window is dated too";
    EXPECT_EQ(v.cookie->last_check_in, h.now());
}

}  // namespace
}  // namespace waitroom::room
