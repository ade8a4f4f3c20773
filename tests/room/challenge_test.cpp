// Proof of work on joining (rooms[].challenge): a new visitor who would be queued gets a
// challenge instead of a place, and joins the queue only with a solution (checked by the gateway,
// which holds the cookie's sealed value; here the harness says "solved"). What a bot would try:
// many cookieless requests, a challenge kept back, one solution sent many times, a solution for
// a room that no longer asks one.

#include <gtest/gtest.h>

#include <bit>

#include "room/harness.hpp"

namespace waitroom::room {
namespace {

using namespace std::chrono_literals;
using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;

config::room challenge_room(std::uint32_t active, std::uint32_t per_minute = 1000) {
    auto r = make_room("shop", active, per_minute);
    r.challenge.enabled = true;
    r.challenge.min_difficulty = 12;
    r.challenge.max_difficulty = 16;
    return r;
}

bool pending(const visitor& v) {
    return v.cookie && challenged(*v.cookie);
}

TEST(Challenge, BelowTheLimitsANewVisitorIsLetInWithoutAChallenge) {
    harness h({challenge_room(2)});
    visitor a;
    auto d = h.visit(a);
    EXPECT_EQ(d.what, action::admit);
    EXPECT_FALSE(d.page.challenge_required);
    EXPECT_FALSE(pending(a));
}

TEST(Challenge, ANewVisitorAtAFullRoomGetsAChallengeAndHoldsNoPlace) {
    harness h({challenge_room(1)});
    visitor in, bot;
    ASSERT_EQ(h.visit(in).what, action::admit);
    for (int i = 0; i < 50; ++i) {
        visitor fresh;  // a cookieless request each time: no place, however many
        auto d = h.visit(fresh);
        EXPECT_EQ(d.what, action::queue);
        EXPECT_TRUE(d.page.challenge_required);
        EXPECT_TRUE(d.challenge_issued);
        EXPECT_EQ(d.page.challenge_difficulty, 12u);
        EXPECT_TRUE(pending(fresh));
        EXPECT_EQ(challenge_bits(*fresh.cookie), 12u);
        EXPECT_EQ(fresh.cookie->accepted_at, 0);
    }
    h.sync();
    EXPECT_EQ(h.state("shop").waiting_total(), 0) << "challenged visitors are counted nowhere";
}

TEST(Challenge, AnUnsolvedChallengeIsServedAgainUnchangedSoItsSeedStays) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    ASSERT_TRUE(pending(v));
    const auto issued = *v.cookie;
    for (int i = 0; i < 5; ++i) {
        h.advance(7s);
        h.sync();
        auto d = h.visit(v);
        EXPECT_EQ(d.what, action::queue);
        EXPECT_TRUE(d.page.challenge_required);
        EXPECT_FALSE(d.cookie_changed) << "a new cookie would change the seed being worked on";
        EXPECT_FALSE(d.challenge_issued);
        EXPECT_EQ(d.cookie, issued);
    }
}

TEST(Challenge, ASolutionJoinsTheQueueWithTheChallengesTicket) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    const auto ticket = v.cookie->ticket;
    h.advance(3s);
    auto d = h.visit(v, "", true);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_TRUE(d.challenge_solved);
    EXPECT_FALSE(d.page.challenge_required);
    ASSERT_FALSE(pending(v));
    EXPECT_EQ(v.cookie->ticket, ticket);
    EXPECT_EQ(v.cookie->bucket, (h.now() / 10'000) * 10'000) << "joins at the back, now";
    h.sync();
    EXPECT_EQ(h.state("shop").waiting_total(), 1);
    // From here it is a queued visitor like any other: its refreshes keep its place.
    h.advance(std::chrono::seconds{d.refresh_seconds});
    h.sync();
    auto again = h.visit(v);
    EXPECT_EQ(again.what, action::queue);
    EXPECT_FALSE(again.page.challenge_required);
    EXPECT_EQ(v.cookie->ticket, ticket);
}

TEST(Challenge, ASolutionSentWithoutAChallengedCookieIsNothing) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    auto d = h.visit(v, "", true);  // "solved" but no challenge to solve: a new visitor
    EXPECT_TRUE(d.page.challenge_required);
    EXPECT_TRUE(pending(v));
}

TEST(Challenge, AStaleChallengeIsReplacedNotJoined) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    const auto old = *v.cookie;
    h.advance(601s);  // past challenge_ttl_ms (10 min)
    h.visit(in);      // keeps its session
    h.sync();
    auto d = h.visit(v, "", true);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_FALSE(d.challenge_solved);
    EXPECT_TRUE(d.challenge_issued);
    ASSERT_TRUE(pending(v));
    EXPECT_NE(v.cookie->ticket, old.ticket);
}

TEST(Challenge, OneSolutionSentManyTimesHoldsOnePlace) {
    harness h({challenge_room(1)});
    visitor in, a;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(a);
    visitor b = a;  // a copy of the solved challenge, sent again
    ASSERT_EQ(h.visit(a, "", true).what, action::queue);
    ASSERT_EQ(h.visit(b, "", true).what, action::queue);
    EXPECT_EQ(a.cookie->ticket, b.cookie->ticket) << "both copies are the same place";
    h.sync();
    EXPECT_EQ(h.state("shop").waiting_total(), 1) << "counted once on the worker that saw both";
    // The place frees: one copy is admitted and spends the ticket; the other is a new visitor.
    h.revoke(in);
    h.sync();
    h.advance(3s);
    EXPECT_EQ(h.visit(a).what, action::admit);
    h.sync();
    auto d = h.visit(b);
    EXPECT_NE(d.what, action::admit);
    EXPECT_TRUE(d.page.challenge_required) << "the spent place's copy starts over";
}

TEST(Challenge, AChallengedVisitorIsLetInOnceTheRoomHasRoomAndNobodyWaits) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    ASSERT_TRUE(pending(v));
    h.revoke(in);
    h.sync();
    h.advance(1s);
    auto d = h.visit(v);  // no solution, no script: a new visitor, and the room has room
    EXPECT_EQ(d.what, action::admit);
    EXPECT_TRUE(v.admitted());
}

TEST(Challenge, VisitorsWhoSolvedGoFirst) {
    harness h({challenge_room(1)});
    visitor in, solver, idle;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(idle);
    h.visit(solver);
    ASSERT_EQ(h.visit(solver, "", true).what, action::queue);
    h.advance(10s);  // a later arrival window than the solver's place
    h.sync();
    h.revoke(in);
    h.sync();
    // The one who never solved asks first but the free place is the queued visitor's.
    auto d = h.visit(idle);
    EXPECT_NE(d.what, action::admit);
    EXPECT_TRUE(d.page.challenge_required);
    EXPECT_EQ(h.visit(solver).what, action::admit);
}

TEST(Challenge, TheDifficultyRisesOneBitPerDoublingOfTheQueueInMinutes) {
    harness h({challenge_room(1, 2)});
    visitor in;
    ASSERT_EQ(h.visit(in).what, action::admit);
    std::vector<visitor> joined(9);
    for (auto& v : joined) {
        h.visit(v);
        ASSERT_EQ(h.visit(v, "", true).what, action::queue);
    }
    h.sync();
    ASSERT_EQ(h.state("shop").waiting_total(), 9);
    visitor next;
    auto d = h.visit(next);
    // 9 waiting at 2 a minute: 4 minutes of queue, bit_width(4) = 3 bits over the minimum.
    EXPECT_EQ(d.page.challenge_difficulty, 12u + std::bit_width(4u));
    EXPECT_EQ(challenge_bits(*next.cookie), d.page.challenge_difficulty);
    // The maximum caps it.
    h.cfg().rooms[0].challenge.max_difficulty = 13;
    h.reload();
    h.sync();
    visitor capped;
    EXPECT_EQ(h.visit(capped).page.challenge_difficulty, 13u);
}

TEST(Challenge, ARoomThatStoppedAskingTakesNoSolution) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    const auto ticket = v.cookie->ticket;
    h.cfg().rooms[0].challenge.enabled = false;
    h.reload();
    h.sync();
    auto d = h.visit(v, "", true);
    EXPECT_EQ(d.what, action::queue);
    EXPECT_FALSE(d.challenge_solved);
    EXPECT_FALSE(d.page.challenge_required);
    EXPECT_FALSE(pending(v));
    EXPECT_NE(v.cookie->ticket, ticket) << "queued as any new visitor, with a ticket of its own";
}

TEST(Challenge, OnlyRoomsThatQueueAsk) {
    for (auto method : {config::queueing_method::passthrough, config::queueing_method::reject}) {
        auto r = challenge_room(1);
        r.method = method;
        harness h({r});
        visitor in, v;
        h.visit(in);
        auto d = h.visit(v);
        EXPECT_FALSE(d.page.challenge_required);
        EXPECT_FALSE(pending(v));
    }
}

TEST(Challenge, AFreshChallengeStandsAboveADeadCookieAndBelowAPlace) {
    harness h({challenge_room(1)});
    visitor in, v, queued;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    h.visit(queued);
    ASSERT_EQ(h.visit(queued, "", true).what, action::queue);
    const auto& r = h.engine().rooms().front();
    const auto challenge = h.engine().standing(r, h.worker(), *v.cookie, h.now());
    // A dead cookie (a session long over), as a sibling subdomain could plant beside it.
    auto dead = *in.cookie;
    dead.last_check_in -= 3'600'000;
    dead.accepted_at -= 3'600'000;
    EXPECT_EQ(h.engine().standing(r, h.worker(), dead, h.now()), cookie_standing{});
    EXPECT_GT(challenge, cookie_standing{}) << "the work in progress is not hidden by a dead one";
    EXPECT_LT(challenge, h.engine().standing(r, h.worker(), *queued.cookie, h.now()));
    h.advance(601s);
    EXPECT_EQ(h.engine().standing(r, h.worker(), *v.cookie, h.now()), cookie_standing{})
        << "a stale challenge is worth nothing";
}

TEST(Challenge, ASolverLetInAtOnceCannotJoinAgainWithTheSameSolution) {
    harness h({challenge_room(1)});
    visitor in, v;
    ASSERT_EQ(h.visit(in).what, action::admit);
    h.visit(v);
    const visitor kept = v;  // the challenged cookie, kept back
    h.revoke(in);
    h.sync();
    h.advance(1s);
    auto d = h.visit(v, "", true);
    ASSERT_EQ(d.what, action::admit) << "the room had room when the solution came";
    EXPECT_TRUE(d.challenge_solved);
    EXPECT_NE(v.cookie->ticket, kept.cookie->ticket) << "the session has a ticket of its own";
    // The room is full again; the kept challenge with the same solution is a new visitor's.
    visitor replay = kept;
    auto again = h.visit(replay, "", true);
    EXPECT_NE(again.what, action::admit);
    EXPECT_FALSE(again.challenge_solved);
    EXPECT_TRUE(again.page.challenge_required);
    h.sync();
    visitor replay2 = kept;
    EXPECT_TRUE(h.visit(replay2, "", true).page.challenge_required) << "on every node after a sync";
}

}  // namespace
}  // namespace waitroom::room
