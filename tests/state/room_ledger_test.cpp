// The store-side arithmetic: deltas sum across nodes, leases never exceed free capacity, silent
// nodes' leases expire, top-ups only hand out what nobody holds.

#include <gtest/gtest.h>

#include <algorithm>

#include <random>
#include <tuple>

#include "waitroom/state/room_ledger.hpp"

#include "state/store_doubles.hpp"

namespace waitroom::state {
namespace {

using test::t0;

room::room_limits limits(std::int64_t active, std::int64_t per_minute) {
    room::room_limits l;
    l.total_active_users = active;
    l.new_users_per_minute = per_minute;
    l.session_ms = 300'000;
    l.abandon_after_ms = 25'000;
    return l;
}

room_report report(const room::room_limits& l) {
    room_report r;
    r.room = "shop";
    r.limits = l;
    return r;
}

// A report from a node whose visitors asked for `demand` slots in the last interval (a lease
// follows recent demand, so a node that asked for none gets one slot).
room_report busy_report(const room::room_limits& l, std::int64_t demand = 100) {
    room_report r = report(l);
    r.deltas.demand = demand;
    return r;
}

// `n` queued tickets numbered from `first` checked into (bucket, window).
void check_in(room::room_deltas& d, std::uint64_t first, int n, std::int64_t bucket,
              std::int64_t window) {
    for (int i = 0; i < n; ++i) {
        d.check_in_ticket({first + static_cast<std::uint64_t>(i), bucket, window});
    }
}

TEST(Ledger, DeltasFromTwoNodesSum) {
    room_ledger ledger;
    auto l = limits(100, 100);
    auto a = report(l);
    a.deltas.admitted.add(t0, 3);
    a.deltas.active.add(t0, 3);
    check_in(a.deltas, 1, 2, t0, t0);
    auto b = report(l);
    b.deltas.admitted.add(t0 + 1000, 4);
    b.deltas.active.add(t0, 4);
    check_in(b.deltas, 3, 1, t0, t0);
    check_in(b.deltas, 10, 5, t0 + 10'000, t0);
    ledger.sync("a", "dc1", a, t0 + 1500, 3000);
    auto g = ledger.sync("b", "dc2", b, t0 + 1500, 3000);
    EXPECT_EQ(g.counts.active, 7);
    EXPECT_EQ(g.counts.admitted_last_minute, 7);
    ASSERT_EQ(g.counts.waiting.size(), 2u);
    EXPECT_EQ(g.counts.waiting[0], (std::pair<std::int64_t, std::int64_t>{t0, 3}));
    EXPECT_EQ(g.counts.waiting[1], (std::pair<std::int64_t, std::int64_t>{t0 + 10'000, 5}));
    EXPECT_EQ(g.counts.datacenters.size(), 2u);
}

// A ledger that is not the one a node synced with (the store lost its memory) refuses the
// node's deltas, which would add to counts it never had, and takes its live windows instead.
TEST(Ledger, RefusesDeltasOfAnotherEpochAndCountsTheNodesLiveWindowsInstead) {
    room_ledger ledger;
    auto l = limits(100, 100);
    auto first = ledger.sync("b", "dc", report(l), t0, 3000);
    EXPECT_EQ(first.epoch, std::to_string(t0) + "/b");
    EXPECT_FALSE(first.stale);

    auto a = busy_report(l, 5);
    a.epoch = "1000/gone";  // the epoch of a store that is no more
    a.deltas.active.add(t0, 1);
    a.deltas.admitted.add(t0, 1);
    a.live.active.add(t0 - 10'000, 6);
    a.live.active.add(t0, 1);
    a.live.admitted.add(t0, 7);
    a.live.waiting.add({t0 - 10'000, t0}, 4);
    a.held = 3;
    auto g = ledger.sync("a", "dc", a, t0 + 100, 3000, 42);
    EXPECT_TRUE(g.stale);
    EXPECT_EQ(g.counts.active, 0);
    EXPECT_EQ(ledger.held_total(), first.counts.held) << "a stale report touches nothing";
    EXPECT_EQ(ledger.counts(l, t0 + 100).datacenters.at(0).nodes, 1u);

    a.full = true;
    g = ledger.sync("a", "dc", a, t0 + 100, 3000, 42);
    EXPECT_FALSE(g.stale);
    EXPECT_EQ(g.epoch, first.epoch);
    EXPECT_EQ(g.counts.active, 7);
    EXPECT_EQ(g.counts.admitted_last_minute, 7);
    ASSERT_EQ(g.counts.waiting.size(), 1u);
    EXPECT_EQ(g.counts.waiting[0].second, 4);
    EXPECT_EQ(ledger.held_by("a"), 3) << "the re-report claims the pool's slots";
    // Other nodes may still have to re-report: nothing granted for one node TTL of the epoch.
    EXPECT_EQ(g.granted, 0);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 5, t0 + 150, g.epoch), 0);

    // Its answer lost, the same batch again (as deltas): the ledger knows it, counts nothing.
    a.full = false;
    g = ledger.sync("a", "dc", a, t0 + 200, 3000, 42);
    EXPECT_FALSE(g.stale);
    EXPECT_EQ(g.counts.active, 7);
    // Then deltas under the ledger's epoch add up as before.
    auto next = report(l);
    next.epoch = g.epoch;
    next.deltas.active.add(t0, 2);
    g = ledger.sync("a", "dc", next, t0 + 300, 3000, 43);
    EXPECT_EQ(g.counts.active, 9);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 5, t0 + 3000, g.epoch), 5) << "every node re-reported";
}

TEST(Ledger, TopUpGivesNothingToANodeOfAnotherEpoch) {
    room_ledger ledger;
    auto l = limits(100, 100);
    auto g = ledger.sync("a", "dc", report(l), t0, 3000);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 5, t0 + 10, "1000/gone"), 0);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 5, t0 + 10, g.epoch), 5);
    EXPECT_EQ(ledger.top_up("b", "dc", l, 1, t0 + 10), 1) << "a node that knows none yet";
}

// A report of a node that has had an answer of the ledger (its epoch: a's first sync at t0). One
// naming no epoch comes from a process that never had one: a restarted node.
room_report known_report(const room::room_limits& l, std::int64_t demand = 100) {
    room_report r = busy_report(l, demand);
    r.epoch = std::to_string(t0) + "/a";
    return r;
}

// A report from a node leaving degraded mode: it holds none of the store's lease, and its
// deltas carry what it admitted from its allowance.
room_report back_report(const room::room_limits& l, std::int64_t at, std::int64_t admitted) {
    room_report r = known_report(l, 2);
    r.deltas.admitted.add(at, admitted);
    r.deltas.active.add(room::floor_to(at, 10'000), admitted);
    r.held_exact = true;
    return r;
}

// Nodes a, b and c sync every second for 8 s, each admitting 30 at first, and lease a few
// slots: each knows the other two (its allowance is a third), and the store has no answer of
// theirs left from before (the first ones, which b and a had with fewer nodes live, are older
// than two node TTLs: see RecentAnswersOfANodeSizeItsReserve).
void three_nodes_before_an_outage(room_ledger& ledger, const room::room_limits& l) {
    for (std::int64_t at = t0; at <= t0 + 7000; at += 1000) {
        for (const char* id : {"a", "b", "c"}) {
            auto r = known_report(l, 2);
            if (at == t0) {
                r.deltas.admitted.add(t0, 30);
                r.deltas.active.add(t0, 30);
            }
            ledger.sync(id, "dc", r, at, 3000);
        }
    }
}

// Tops node `id` up until the store has nothing left to grant (with other nodes live one top-up
// takes at most half of what nobody holds).
void take_all(room_ledger& ledger, const char* id, const room::room_limits& l, std::int64_t at) {
    for (int i = 0; i < 64 && ledger.top_up(id, "dc", l, 1000, at) > 0; ++i) {
    }
}

// With nobody else to wait for, a node back from an outage is granted at once: no queueing
// below the limits because the store was away.
TEST(Ledger, ANodeAloneBackFromAnOutageIsGrantedAtOnce) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    ledger.sync("a", "dc", known_report(l), t0, 3000);
    auto g = ledger.sync("a", "dc", back_report(l, t0 + 20'000, 50), t0 + 30'000, 3000);
    EXPECT_GT(g.granted, 0);
    EXPECT_GT(ledger.top_up("a", "dc", l, 5, t0 + 30'100), 0);
}

// The first node back is granted all but what the silent nodes may have admitted unreported:
// their lease then and a third of new_users_per_minute each. As each reports leaving degraded
// mode, its lease goes from the reserve; the rest goes with its next report, which shows that
// it got an answer (see ANodeWhoseAnswerIsLostAfterItLeftDegradedModeStaysReserved).
TEST(Ledger, ANodeBackFromAnOutageIsGrantedAllButWhatTheSilentNodesMayHaveAdmitted) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    three_nodes_before_an_outage(ledger, l);
    const std::int64_t lease_b = ledger.held_by("b"), lease_c = ledger.held_by("c");
    const std::int64_t back = t0 + 31'000;
    ledger.sync("a", "dc", back_report(l, back - 5000, 20), back, 3000);
    ASSERT_EQ(ledger.held_by("b"), 0) << "the store forgot the silent nodes";
    take_all(ledger, "a", l, back + 100);
    auto counted = [&](std::int64_t at) {
        return ledger.counts(l, at).admitted_last_minute + ledger.held_total();
    };
    EXPECT_EQ(counted(back + 100), 600 - (lease_b + 200) - (lease_c + 200));

    // b reports what it admitted (within its third): its lease is no longer reserved, its
    // allowance is until its next report (which leaves a nothing more here: 150 of those 200
    // are counted in the minute already).
    const std::int64_t before_b = counted(back + 100);
    ledger.sync("b", "dc", back_report(l, back - 5000, 150), back + 400, 3000);
    take_all(ledger, "a", l, back + 500);
    EXPECT_EQ(counted(back + 500), before_b + 150);
    ledger.sync("b", "dc", known_report(l, 2), back + 600, 3000);
    take_all(ledger, "a", l, back + 650);
    EXPECT_EQ(counted(back + 650), 600 - (lease_c + 200));
    ledger.sync("c", "dc", back_report(l, back - 5000, 100), back + 700, 3000);
    ledger.sync("c", "dc", known_report(l, 2), back + 750, 3000);
    take_all(ledger, "a", l, back + 800);
    EXPECT_EQ(counted(back + 800), 600) << "everyone reported: nothing is reserved";
}

// b reports leaving degraded mode and the store applies it, but its answer is lost (a timeout:
// Redis answered after b gave up): b stays degraded and keeps admitting from its allowance.
// Those admissions must stay reserved until b shows that it got an answer, or a is granted the
// same places: b's reserve is kept while its reports still leave degraded mode, and goes with
// its first report that does not (or one node TTL after its last report).
TEST(Ledger, ANodeWhoseAnswerIsLostAfterItLeftDegradedModeStaysReserved) {
    room_ledger ledger;
    auto l = limits(1000, 600);  // the rate limit binds
    three_nodes_before_an_outage(ledger, l);
    const std::int64_t lease_c = ledger.held_by("c");
    const std::int64_t back = t0 + 31'000;
    // a syncs, then takes whatever the store will grant it: what is left is reserved.
    auto free_for_a = [&](std::int64_t at) {
        ledger.sync("a", "dc", known_report(l, 2), at, 3000);
        take_all(ledger, "a", l, at + 50);
        return 600 - (ledger.counts(l, at + 50).admitted_last_minute + ledger.held_total());
    };
    ledger.sync("a", "dc", back_report(l, back - 5000, 20), back, 3000);
    ledger.sync("b", "dc", back_report(l, back - 5000, 30), back + 400, 3000);  // answer lost
    EXPECT_EQ(free_for_a(back + 450), (lease_c + 200) + 200) << "b may still admit its third";
    // Lost again: b reports what it admitted meanwhile, still leaving degraded mode. Its
    // reserve is now the most any of its answers allows, the lost one (half: a and b were live)
    // included, since the store cannot tell whether b had it.
    ledger.sync("b", "dc", back_report(l, back + 1000, 30), back + 1400, 3000);
    EXPECT_EQ(ledger.sync("a", "dc", known_report(l, 2), back + 1450, 3000).granted, 0);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 1000, back + 1500), 0)
        << "170 admitted, c's 203 and b's 300 reserved: nothing is free";
    // Its answer came: its next report is an ordinary one, and nothing of b is reserved.
    ledger.sync("b", "dc", known_report(l, 2), back + 2400, 3000);
    EXPECT_EQ(free_for_a(back + 2450), lease_c + 200) << "c, silent, still is";

    // c reports leaving degraded mode and is never heard of again: reserved for one node TTL.
    ledger.sync("c", "dc", back_report(l, back - 5000, 10), back + 2600, 3000);
    ledger.sync("b", "dc", known_report(l, 2), back + 3400, 3000);
    EXPECT_EQ(free_for_a(back + 5500), 200);
    ledger.sync("b", "dc", known_report(l, 2), back + 5600, 3000);
    EXPECT_EQ(free_for_a(back + 5600), 0);
}

// A node's own reserve never holds its own grants back: it uses either their slots (the answer
// came) or its allowance (the answer and the slots were lost), never both. So a node alone whose
// answers are lost is granted at once as soon as one comes.
TEST(Ledger, ANodeLeavingDegradedModeIsNotHeldBackByItsOwnReserve) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    ledger.sync("a", "dc", known_report(l), t0, 3000);
    ledger.sync("a", "dc", back_report(l, t0 + 20'000, 50), t0 + 30'000, 3000);  // answer lost
    auto g = ledger.sync("a", "dc", back_report(l, t0 + 30'500, 5), t0 + 31'000, 3000);
    EXPECT_GT(g.granted, 0);
    EXPECT_GT(ledger.top_up("a", "dc", l, 1000, t0 + 31'100), 0);
    // Nobody else is granted a's reserve meanwhile (a was alone: its allowance was the rate).
    ledger.sync("b", "dc", known_report(l), t0 + 31'200, 3000);
    take_all(ledger, "b", l, t0 + 31'300);
    EXPECT_EQ(ledger.held_by("b"), 0);
}

// Hostile: a node whose clock is a minute ahead leaves degraded mode. The ghost window it opens
// ends a minute ahead of the others' clocks, and every node would be a ghost to the others (each
// last seen before its end) that long: the room held below its limits for a minute. A window
// ending more than a node TTL ahead of the reader's clock is no window.
TEST(Ledger, ANodeWhoseClockIsAheadHoldsNothingBackForTheOthers) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    three_nodes_before_an_outage(ledger, l);
    const std::int64_t back = t0 + 31'000;
    ledger.sync("a", "dc", known_report(l, 2), back, 3000);
    ledger.sync("b", "dc", known_report(l, 2), back + 100, 3000);
    ledger.sync("c", "dc", back_report(l, back + 60'000, 10), back + 60'200, 3000);
    ledger.sync("c", "dc", known_report(l, 2), back + 61'200, 3000);  // its answer came
    ledger.sync("a", "dc", known_report(l, 2), back + 1000, 3000);
    ledger.sync("b", "dc", known_report(l, 2), back + 1100, 3000);
    take_all(ledger, "a", l, back + 1200);
    EXPECT_EQ(ledger.counts(l, back + 1200).admitted_last_minute + ledger.held_total(), 600);
}

// Nor does the window's end that such a node left far ahead disable the next outage's reserve:
// a node back from it opens a window of its own, and the node silent since is reserved for
// (with the end kept, no window opened again until the clock caught up, and a took everything).
TEST(Ledger, AWindowEndLeftAheadByAClockAheadDoesNotDisableTheNextReserve) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    three_nodes_before_an_outage(ledger, l);
    ledger.sync("c", "dc", back_report(l, t0 + 68'000, 10), t0 + 68'000, 3000);  // 60 s ahead
    ledger.sync("c", "dc", known_report(l, 2), t0 + 69'000, 3000);
    for (std::int64_t at : {t0 + 8000, t0 + 9000}) {
        ledger.sync("a", "dc", known_report(l, 2), at, 3000);
        ledger.sync("b", "dc", known_report(l, 2), at + 100, 3000);
    }
    const std::int64_t back = t0 + 31'000;  // the next outage: b stays silent
    ledger.sync("a", "dc", back_report(l, back - 5000, 20), back, 3000);
    take_all(ledger, "a", l, back + 100);
    EXPECT_LT(ledger.counts(l, back + 100).admitted_last_minute + ledger.held_total(), 600);
}

// A sync sent just before Redis froze runs when it resumes, after its node gave up on it: the
// node sizes its allowance from the answer before, which the store must still reserve for. Here
// a node d joins just before the outage, and c's last sync, whose answer c never got, saw four
// nodes: c still admits its third, not a quarter (the integration test admitted a 9th visitor
// into a room of 8 when the store reserved by the lost answer's free places).
TEST(Ledger, RecentAnswersOfANodeSizeItsReserve) {
    room_ledger ledger;
    auto l = limits(100'000, 12'000);  // the rate limit binds
    three_nodes_before_an_outage(ledger, l);
    ledger.sync("d", "dc", known_report(l, 2), t0 + 7100, 3000);
    ledger.sync("c", "dc", known_report(l, 2), t0 + 7300, 3000);  // its answer is lost
    const std::int64_t lease_b = ledger.held_by("b"), lease_c = ledger.held_by("c"),
                       lease_d = ledger.held_by("d");
    const std::int64_t back = t0 + 31'000;
    ledger.sync("a", "dc", back_report(l, back - 5000, 20), back, 3000);
    ASSERT_EQ(ledger.held_by("c"), 0) << "the store forgot the silent nodes";
    take_all(ledger, "a", l, back + 100);
    const std::int64_t counted =
        ledger.counts(l, back + 100).admitted_last_minute + ledger.held_total();
    // b and c a third each (c by the answer it had), d a quarter (it never had another).
    EXPECT_EQ(counted, 12'000 - (lease_b + 4000) - (lease_c + 4000) - (lease_d + 3000));
}

// A node that never comes back (it died in the outage) is reserved for one node TTL after the
// last node back, no longer.
TEST(Ledger, ASilentNodeIsReservedForOneNodeTtlAfterTheLastNodeBack) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    three_nodes_before_an_outage(ledger, l);
    const std::int64_t back = t0 + 31'000;
    ledger.sync("a", "dc", back_report(l, back - 5000, 20), back, 3000);
    ledger.sync("b", "dc", back_report(l, back - 5000, 20), back + 500, 3000);
    auto counted = [&](std::int64_t at) {
        return ledger.counts(l, at).admitted_last_minute + ledger.held_total();
    };
    take_all(ledger, "a", l, back + 3400);
    EXPECT_LT(counted(back + 3400), 600);
    take_all(ledger, "b", l, back + 3500);
    EXPECT_EQ(counted(back + 3500), 600);
}

// Hostile: whoever makes one node lose the store (load, a network fault) does not hold the
// room below its limits. The nodes that kept syncing are reserved for only until their next
// sync shows them reporting, and a node alone in its outage reserves nothing for itself.
TEST(Ledger, ANodeBackFromItsOwnOutageHoldsTheOthersBackOnlyUntilTheyNextSync) {
    room_ledger ledger;
    auto l = limits(1000, 600);
    three_nodes_before_an_outage(ledger, l);
    std::int64_t at = t0 + 1000;
    for (int s = 2; s <= 31; ++s) {  // b and c keep syncing; a cannot reach the store
        at = t0 + s * 1000;
        ledger.sync("b", "dc", known_report(l, 2), at, 3000);
        ledger.sync("c", "dc", known_report(l, 2), at + 300, 3000);
    }
    const std::int64_t back = at + 500;
    ledger.sync("a", "dc", back_report(l, back - 5000, 20), back, 3000);
    auto counted = [&](std::int64_t t) {
        return ledger.counts(l, t).admitted_last_minute + ledger.held_total();
    };
    take_all(ledger, "a", l, back + 10);
    EXPECT_LT(counted(back + 10), 600) << "b and c might have run degraded too";
    ledger.sync("b", "dc", known_report(l, 2), back + 500, 3000);
    ledger.sync("c", "dc", known_report(l, 2), back + 800, 3000);
    take_all(ledger, "a", l, back + 900);
    EXPECT_EQ(counted(back + 900), 600);
}

TEST(Ledger, MovesBetweenWindowsKeepTheTotal) {
    room_ledger ledger;
    auto l = limits(100, 100);
    auto r = report(l);
    r.deltas.active.add(t0, 1);
    ledger.sync("a", "dc", r, t0, 3000);
    auto move = report(l);
    move.deltas.active.add(t0, -1);
    move.deltas.active.add(t0 + 10'000, 1);
    auto g = ledger.sync("a", "dc", move, t0 + 10'000, 3000);
    EXPECT_EQ(g.counts.active, 1);
    // The session then ends with its window: 5 minutes after the last check-in's window.
    auto later = ledger.sync("a", "dc", report(l), t0 + 10'000 + 10'000 + 300'000, 1'000'000);
    EXPECT_EQ(later.counts.active, 0);
}

// The places by their visitor's last check-in window: when each frees if its visitor does not
// come back. Only live windows above zero, ascending; the list sums to the active count.
TEST(Ledger, ListsThePlacesHeldByEachLiveCheckInWindowAscending) {
    room_ledger ledger;
    auto l = limits(100, 100);
    const std::int64_t w = room::active_window_ms(l);  // 5 s for 5-minute sessions
    auto r = report(l);
    r.deltas.active.add(t0 + 3 * w, 2);
    r.deltas.active.add(t0, 3);
    r.deltas.active.add(t0 + w, -1);  // a copy of a cookie no visitor holds
    ledger.sync("a", "dc", r, t0 + 3 * w, 3000);
    auto move = report(l);  // one visitor of t0 comes back
    move.deltas.active.add(t0, -1);
    move.deltas.active.add(t0 + 4 * w, 1);
    auto g = ledger.sync("a", "dc", move, t0 + 4 * w, 3000);
    using windows = std::vector<std::pair<std::int64_t, std::int64_t>>;
    EXPECT_EQ(g.counts.active_windows, (windows{{t0, 2}, {t0 + 3 * w, 2}, {t0 + 4 * w, 1}}));
    EXPECT_EQ(g.counts.active, 5);
    // The window of t0 lapses a session after it ends, and its places with it.
    auto c = ledger.counts(l, t0 + w + l.session_ms);
    EXPECT_EQ(c.active_windows, (windows{{t0 + 3 * w, 2}, {t0 + 4 * w, 1}}));
    EXPECT_EQ(c.active, 3);
}

TEST(Ledger, LeasesNeverExceedFreeCapacity) {
    room_ledger ledger;
    auto l = limits(50, 40);
    std::mt19937_64 rng(5);
    struct node {
        std::string id;
        std::int64_t pool = 0;
        std::int64_t used_unreported = 0;
        std::int64_t release = 0;
    };
    std::vector<node> nodes{{"a"}, {"b"}, {"c"}};
    std::int64_t now = t0;
    std::vector<std::int64_t> true_admissions;  // times
    for (int step = 0; step < 3000; ++step) {
        now += std::uniform_int_distribution<int>(10, 400)(rng);
        node& n = nodes[std::uniform_int_distribution<int>(0, 2)(rng)];
        int op = std::uniform_int_distribution<int>(0, 9)(rng);
        if (op < 6) {
            // admit a few from the pool
            int want = std::uniform_int_distribution<int>(0, 3)(rng);
            for (int i = 0; i < want && n.pool > 0; ++i) {
                --n.pool;
                ++n.used_unreported;
                true_admissions.push_back(now);
            }
        } else if (op < 9) {
            auto r = report(l);
            r.deltas.admitted.add(room::floor_to(now, 1000), n.used_unreported);
            r.deltas.active.add(room::floor_to(now, 10'000), n.used_unreported);
            r.deltas.slots_used = n.used_unreported;
            r.deltas.demand = n.used_unreported + 1;
            std::int64_t give = std::min(n.pool, n.release);
            n.pool -= give;
            r.slots_returned = give;
            n.used_unreported = 0;
            auto g = ledger.sync(n.id, "dc", r, now, 1'000'000);
            n.pool += g.granted;
            n.release = g.release;
        } else {
            n.pool += ledger.top_up(n.id, "dc", l, 5, now);
        }
        ASSERT_LE(ledger.held_total(), ledger.capacity(l, now)) << step;
        std::int64_t pools = 0;
        for (auto& x : nodes) {
            pools += x.pool;
        }
        ASSERT_LE(pools, ledger.held_total());
    }
    // The per-minute limit held over every 60 s span of true admission times.
    for (std::size_t i = 0; i < true_admissions.size(); ++i) {
        auto in_span =
            std::count_if(true_admissions.begin(), true_admissions.end(), [&](std::int64_t a) {
                return a >= true_admissions[i] && a < true_admissions[i] + 60'000;
            });
        ASSERT_LE(in_span, 40);
    }
    EXPECT_GE(true_admissions.size(), 90u);  // the limits are used, not wasted
}

TEST(Ledger, LeaseFollowsEachNodesDemand) {
    room_ledger ledger;
    // Far from the limit: 1000 free places against 40 slot requests an interval.
    auto l = limits(1000, 10'000);
    // About one interval of a node's demand (ceil(d / 2) + 1 of the decayed demand d, which
    // is about two intervals of it), alone or not.
    EXPECT_EQ(ledger.sync("busy", "dc", busy_report(l, 30), t0, 3000).granted, 16);
    EXPECT_EQ(ledger.sync("quiet", "dc", busy_report(l, 10), t0, 3000).granted, 6);
    EXPECT_EQ(ledger.sync("busy", "dc", busy_report(l, 30), t0 + 1000, 3000).granted, 8);  // d 45
    // Once its demand falls, it gives back what is above: d 22.5 + 2, ceil(12.25) + 1 = 14.
    auto ga = ledger.sync("busy", "dc", busy_report(l, 2), t0 + 2000, 3000);
    EXPECT_EQ(ga.granted, 0);
    EXPECT_EQ(ga.release, 24 - 14);
    EXPECT_EQ(ledger.sync("quiet", "dc", busy_report(l, 10), t0 + 2000, 3000).granted, 3);  // d 15
}

TEST(Ledger, SilentNodesLeaseExpires) {
    room_ledger ledger;
    auto l = limits(10, 100);
    auto g = ledger.sync("gone", "dc", busy_report(l), t0, 3000);
    EXPECT_EQ(g.granted, 10);
    EXPECT_EQ(ledger.top_up("other", "dc", l, 5, t0 + 1000), 0);
    auto g2 = ledger.sync("other", "dc", busy_report(l), t0 + 3000, 3000);
    EXPECT_EQ(g2.granted, 10);
    EXPECT_EQ(ledger.held_by("gone"), 0);
}

TEST(Ledger, TopUpGrantsOnlyCapacityNobodyHolds) {
    room_ledger ledger;
    auto l = limits(10, 100);
    auto r = busy_report(l);
    r.deltas.active.add(t0, 4);
    r.deltas.admitted.add(t0, 4);
    auto g = ledger.sync("a", "dc", r, t0, 3000);
    EXPECT_EQ(g.granted, 6);
    EXPECT_EQ(ledger.top_up("b", "dc", l, 5, t0 + 100), 0);
    auto used = report(l);
    used.deltas.slots_used = 0;
    used.slots_returned = 2;
    ledger.sync("a", "dc", used, t0 + 200, 3000);
    EXPECT_LE(ledger.top_up("b", "dc", l, 5, t0 + 300), 2);
    EXPECT_LE(ledger.held_total(), 6);
}

TEST(Ledger, RoomWithoutSlotsGivesTheLeaseBack) {
    room_ledger ledger;
    auto l = limits(10, 100);
    ledger.sync("a", "dc", busy_report(l), t0, 3000);
    l.needs_slots = false;  // e.g. queue_all switched on
    auto g = ledger.sync("a", "dc", report(l), t0 + 1000, 3000);
    EXPECT_EQ(g.granted, 0);
    EXPECT_EQ(g.release, 10);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 3, t0 + 1100), 0);
}

TEST(Ledger, LeaseIsCappedAtRecentDemandSoTopUpsFindFreeSlots) {
    room_ledger ledger;
    auto l = limits(1000, 200);
    // A quiet node asking for 3 slots an interval leases about two intervals of that, not the
    // whole free capacity.
    auto g = ledger.sync("a", "dc", busy_report(l, 3), t0, 3000);
    EXPECT_EQ(g.granted, 3);  // ceil(3 / 2) + 1
    g = ledger.sync("a", "dc", busy_report(l, 3), t0 + 1000, 3000);
    EXPECT_EQ(ledger.held_by("a"), 4);  // decayed demand 4.5: ceil(2.25) + 1 = 4
    // The rest stays free: a second node whose traffic just rose tops up from it at once, half
    // of what nobody holds per call while another node is live.
    EXPECT_EQ(ledger.top_up("b", "dc", l, 150, t0 + 1100), 98);  // (196 + 1) / 2
    EXPECT_EQ(ledger.top_up("b", "dc", l, 150, t0 + 1200), 49);  // (98 + 1) / 2
    // Once demand falls, a lease above the cap is handed back at the next sync.
    auto gb = ledger.sync("b", "dc", busy_report(l, 2), t0 + 2000, 3000);
    EXPECT_EQ(gb.granted, 0);
    EXPECT_EQ(gb.release, 98 + 49 - 2);
}

TEST(Ledger, TopUpsLeaveSlotsForTheNextNodeToRunDry) {
    room_ledger ledger;
    auto l = limits(1000, 20);
    ledger.sync("big", "dc", busy_report(l, 0), t0, 3000);
    ledger.sync("small", "dc", busy_report(l, 0), t0, 3000);
    // The big node asks for far more than is left, again and again; it never takes the last
    // slots from under the small node, which gets one as long as any is unheld.
    std::int64_t big = 0;
    for (int i = 0; i < 3; ++i) {
        big += ledger.top_up("big", "dc", l, 100, t0 + 100 + i);
    }
    const std::int64_t unheld = ledger.capacity(l, t0 + 200) - ledger.held_total();
    EXPECT_GT(unheld, 0);
    EXPECT_EQ(ledger.top_up("small", "dc", l, 1, t0 + 200), 1);
    EXPECT_LE(ledger.held_total(), ledger.capacity(l, t0 + 200));
    EXPECT_GT(big, 10);  // yet the big node got most of them
}

TEST(Ledger, LeaseTakesHalfOfItsShareWhileOtherNodesAreLive) {
    auto l = limits(1000, 40);
    // Alone, a busy node leases all of the free capacity.
    room_ledger alone;
    EXPECT_EQ(alone.sync("a", "dc", busy_report(l), t0, 3000).granted, 40);
    // With another node live, a node leases at most half of its share of the capacity: the
    // other half stays unheld for the top-ups of whichever node runs dry first. Far from the
    // limit, this binds a node of little demand (a node of more leases about two intervals of
    // its demand, which is less).
    auto far = limits(1000, 300);
    room_ledger two;
    EXPECT_EQ(two.sync("a", "dc", busy_report(far, 99), t0, 3000).granted, 51);
    // 300 free places, demand 100 in all (not near the limit): the 1 % node's whole share is
    // 3, its demand's cap 2; it leases half of its share, 1.
    EXPECT_EQ(two.sync("b", "dc", busy_report(far, 1), t0 + 100, 3000).granted, 1);
    // (A node without demand leases nothing at all.)
    EXPECT_EQ(two.sync("c", "dc", busy_report(far, 0), t0 + 200, 3000).granted, 0);
}

TEST(Ledger, TakesBackALeaseNotUsedForAnIntervalWhileOtherNodesAreLive) {
    room_ledger ledger;
    auto l = limits(1000, 200);
    ledger.sync("big", "dc", busy_report(l, 50), t0, 3000);
    auto g = ledger.sync("small", "dc", busy_report(l, 6), t0 + 10, 3000);
    ASSERT_GT(g.granted, 0);
    const std::int64_t lease = ledger.held_by("small");
    // None of the small node's visitors asked for a slot this interval: it hands back what sat
    // in its pool (sync_task) and leases nothing more, though its decayed demand is not zero.
    auto idle = report(l);
    idle.slots_returned = lease;
    auto g2 = ledger.sync("small", "dc", idle, t0 + 1010, 3000);
    EXPECT_EQ(g2.granted, 0);
    EXPECT_EQ(g2.release, 0);
    EXPECT_EQ(ledger.held_by("small"), 0);
    // An older node that does not hand its pool back is asked to release all of it.
    auto g3 = ledger.sync("big", "dc", report(l), t0 + 1020, 3000);
    EXPECT_EQ(g3.granted, 0);
    EXPECT_EQ(g3.release, ledger.held_by("big"));
    // Alone, a node keeps a lease while its decayed demand lasts (nobody else needs it).
    room_ledger alone;
    alone.sync("a", "dc", busy_report(l, 6), t0, 3000);
    alone.sync("a", "dc", report(l), t0 + 1000, 3000);
    EXPECT_GT(alone.held_by("a"), 0);
}

TEST(Ledger, ALeaseTakesAtMostTheNodesShareOfWhatNobodyHolds) {
    room_ledger ledger;
    auto l = limits(1000, 1000);
    ledger.sync("big", "dc", busy_report(l, 60), t0, 3000);
    ledger.sync("small", "dc", busy_report(l, 20), t0 + 10, 3000);
    // The big node tops up until few slots are unheld (its visitors used them: the store does
    // not know yet).
    while (ledger.capacity(l, t0 + 100) - ledger.held_total() >= 10) {
        ledger.top_up("big", "dc", l, 100, t0 + 100);
    }
    const std::int64_t unheld = ledger.capacity(l, t0 + 200) - ledger.held_total();
    ASSERT_GT(unheld, 2);
    ASSERT_LT(unheld, 10);
    // The small node's lease target (from the capacity the store sees, which counts the slots
    // the big node holds, and from its demand) is above what nobody holds; it gets its share
    // of that, rounded down, not all of it: decayed demand 20 / 2 + 30 against the big node's
    // 60, 40 %.
    auto g = ledger.sync("small", "dc", busy_report(l, 30), t0 + 1010, 3000);
    EXPECT_EQ(g.granted, unheld * 40 / 100);
    EXPECT_GT(ledger.capacity(l, t0 + 1010) - ledger.held_total(), 0);
}

TEST(Ledger, NearTheLimitATopUpTakesAtMostTheNodesShareOfWhatNobodyHolds) {
    room_ledger ledger;
    auto l = limits(1000, 40);
    // Shares 70 / 20 / 5 / 5 of the demand.
    ledger.sync("a", "dc", busy_report(l, 14), t0, 3000);
    ledger.sync("b", "dc", busy_report(l, 4), t0 + 1, 3000);
    ledger.sync("c", "dc", busy_report(l, 1), t0 + 2, 3000);
    ledger.sync("d", "dc", busy_report(l, 1), t0 + 3, 3000);
    const std::int64_t unheld = ledger.capacity(l, t0 + 10) - ledger.held_total();
    ASSERT_GE(unheld, 20);
    // The 20 % node asks for far more: it gets a quarter (an even split is more than its share),
    // where half of the unheld slots stranded the last free places in its pool while the 70 %
    // node ran dry.
    EXPECT_EQ(ledger.top_up("b", "dc", l, 100, t0 + 10), unheld / 4);
    // The 70 % node gets its share, still at most half.
    const std::int64_t left = ledger.capacity(l, t0 + 11) - ledger.held_total();
    const std::int64_t big = ledger.top_up("a", "dc", l, 100, t0 + 11);
    EXPECT_EQ(big, std::min((left + 1) / 2, left * 7 / 10));
    // At least one, as long as any is unheld.
    while (ledger.capacity(l, t0 + 12) - ledger.held_total() > 1) {
        ASSERT_GE(ledger.top_up("c", "dc", l, 100, t0 + 12), 1);
    }
    EXPECT_EQ(ledger.top_up("d", "dc", l, 100, t0 + 12), 1);
    EXPECT_EQ(ledger.top_up("d", "dc", l, 100, t0 + 12), 0);
}

TEST(Ledger, NearTheLimitNobodyLeasesAndATopUpTakesWhatItsVisitorsNeed) {
    room_ledger ledger;
    auto l = limits(20, 60);
    // Far from the limit (20 free, decayed demand 2 in all: 2 * 2 + 2 a node = 8), nodes lease
    // about one interval of their demand, and a top-up gets what it asks for (at most half
    // of what nobody holds), not just what its visitors need.
    EXPECT_EQ(ledger.sync("a", "dc", busy_report(l, 1), t0, 3000).granted, 2);
    EXPECT_EQ(ledger.sync("b", "dc", busy_report(l, 1), t0 + 10, 3000).granted, 2);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 4, t0 + 20, "", 0, 1), 4);
    ASSERT_EQ(ledger.top_up("a", "dc", l, 6, t0 + 30), 6);
    // Node a admits 12: 8 places are left, against decayed demand 12.5 + 1: near the limit.
    // It leases nothing more.
    auto filled = busy_report(l, 12);
    filled.deltas.admitted.add(room::floor_to(t0 + 1000, 1000), 12);
    filled.deltas.active.add(room::floor_to(t0 + 1000, 10'000), 12);
    filled.deltas.slots_used = 12;
    auto ga = ledger.sync("a", "dc", filled, t0 + 1000, 3000);
    EXPECT_EQ(ga.granted, 0);
    EXPECT_EQ(ga.release, 0);
    EXPECT_EQ(ledger.capacity(l, t0 + 1000), 8);
    // Node b, with visitors still (its decayed demand would keep 2), is asked for all of its
    // lease back: at its next report what it did not use is unheld.
    auto gb = ledger.sync("b", "dc", busy_report(l, 1), t0 + 1010, 3000);
    EXPECT_EQ(gb.granted, 0);
    EXPECT_EQ(gb.release, 2);
    // A top-up takes what its visitors need, where it could have had 3 ((6 + 1) / 2); one that
    // does not say (an older node) is granted as before.
    EXPECT_EQ(ledger.top_up("a", "dc", l, 4, t0 + 1020, "", 0, 1), 1);
    EXPECT_EQ(ledger.top_up("a", "dc", l, 4, t0 + 1030, "", 0, 0), 3);
    EXPECT_EQ(ledger.capacity(l, t0 + 1030) - ledger.held_total(), 2);
    // The edge: two nodes of decayed demand 1 each are near a room of 2 * 2 + 2 * 2 = 8 free
    // places, and not near 9; of demand 3 and 1, near 2 * 4 + 2 * 2 = 12 and not near 13 (node
    // b's lease there is half its quarter share, 1).
    for (const auto& [places, demand_a, lease] :
         {std::tuple{8, 1, 0}, std::tuple{9, 1, 2}, std::tuple{12, 3, 0}, std::tuple{13, 3, 1}}) {
        room_ledger edge;
        auto e = limits(places, 1000);
        edge.sync("a", "dc", busy_report(e, demand_a), t0, 3000);
        EXPECT_EQ(edge.sync("b", "dc", busy_report(e, 1), t0 + 10, 3000).granted, lease) << places;
    }
    // A node alone is never near its limit: nobody else could need its lease.
    room_ledger alone;
    EXPECT_EQ(alone.sync("a", "dc", busy_report(l, 30), t0, 3000).granted, 16);
    EXPECT_EQ(alone.top_up("a", "dc", l, 4, t0 + 10, "", 0, 1), 4);
}

TEST(Ledger, EachWindowCountsAtLeastZeroSummedOverNodes) {
    room_ledger ledger;
    auto l = limits(100, 100);
    const std::int64_t w0 = t0;
    const std::int64_t w1 = t0 + 10'000;
    auto a = report(l);
    a.deltas.active.add(w0, 5);
    ledger.sync("a", "dc", a, t0 + 1000, 60'000);
    // Twenty copies of one cookie of w0 check in on node b: +20 in w1, −20 in w0.
    auto b = report(l);
    b.deltas.active.add(w1, 20);
    b.deltas.active.add(w0, -20);
    EXPECT_EQ(ledger.sync("b", "dc", b, w1 + 1000, 60'000).counts.active, 20);
    // The four others of w0 move on (node a): w0 stays at its floor, nobody is uncounted.
    auto others = report(l);
    others.deltas.active.add(w1, 4);
    others.deltas.active.add(w0, -4);
    EXPECT_EQ(ledger.sync("a", "dc", others, w1 + 2000, 60'000).counts.active, 24);
    EXPECT_EQ(ledger.capacity(l, w1 + 2000), 76);
}

TEST(Ledger, AMinusOneThatArrivesBeforeItsPlusOneStillMeetsIt) {
    room_ledger ledger;
    auto l = limits(100, 100);
    const std::int64_t w1 = t0 + 10'000;
    auto first = report(l);
    first.deltas.active.add(t0, 1);
    ledger.sync("a", "dc", first, t0 + 500, 60'000);
    // The visitor moves to w1 on node b, then on to w2 on node c, before node b has synced.
    auto c = report(l);
    c.deltas.active.add(w1, -1);
    c.deltas.active.add(w1 + 10'000, 1);
    ledger.sync("c", "dc", c, w1 + 10'500, 60'000);
    auto b = report(l);
    b.deltas.active.add(t0, -1);
    b.deltas.active.add(w1, 1);
    EXPECT_EQ(ledger.sync("b", "dc", b, w1 + 10'600, 60'000).counts.active, 1);
}

// Seven tickets queued; five move on to the next window, and older copies of them come after;
// one is admitted (twice, on two workers): each ticket counts once, in its latest window.
TEST(Ledger, AQueuedTicketCountsOnceInItsLatestWindow) {
    room_ledger ledger;
    auto l = limits(100, 100);
    auto r = report(l);
    check_in(r.deltas, 1, 7, t0, t0);
    check_in(r.deltas, 1, 5, t0, t0 + 10'000);
    check_in(r.deltas, 1, 5, t0, t0);  // copies of the cookies of t0
    r.deltas.leave_queue(6);
    r.deltas.leave_queue(6);
    auto g = ledger.sync("a", "dc", r, t0 + 10'500, 60'000);
    ASSERT_EQ(g.counts.waiting.size(), 1u);
    EXPECT_EQ(g.counts.waiting[0], (std::pair<std::int64_t, std::int64_t>{t0, 6}));
    auto again = report(l);
    check_in(again.deltas, 1, 7, t0, t0 + 10'000);  // on another node
    EXPECT_EQ(ledger.sync("b", "dc", again, t0 + 10'600, 60'000).counts.waiting.at(0).second, 7)
        << "the admitted ticket's copies check in as any: a spent place is refused by the node";
}

// Past the bound, the largest bucket is sampled: the count stays within a few percent, the
// store keeps at most the bound, and a small bucket beside it stays exact.
TEST(Ledger, CountsAFloodOfDistinctTicketsWithinAFewPercentInBoundedMemory) {
    room_ledger ledger;
    auto l = limits(100, 100);
    std::mt19937_64 rng(7);
    auto small = report(l);
    check_in(small.deltas, 1, 40, t0, t0);
    ledger.sync("a", "dc", small, t0 + 100, 60'000);
    std::int64_t counted = 0;
    for (int k = 0; k < 25; ++k) {
        auto r = report(l);
        for (int i = 0; i < 2'000; ++i) {
            r.deltas.check_in_ticket({rng(), t0 + 10'000, t0 + 10'000});
        }
        auto g = ledger.sync("a", "dc", r, t0 + 10'100 + k, 60'000);
        ASSERT_EQ(g.counts.waiting.size(), 2u);
        EXPECT_EQ(g.counts.waiting[0].second, 40);
        counted = g.counts.waiting[1].second;
    }
    EXPECT_NEAR(static_cast<double>(counted), 50'000.0, 4'000.0);
}

// A flag's ticket is listed to every node for as long as it lasts, within its bound.
TEST(Ledger, ListsFlaggedTicketsToEveryNodeWithinTheirBound) {
    room_ledger ledger;
    auto l = limits(100, 100);
    auto a = report(l);
    a.deltas.flag(0xF1A6ull);
    ledger.sync("a", "dc", a, t0 + 100, 60'000);
    EXPECT_EQ(ledger.sync("b", "dc", report(l), t0 + 200, 60'000).counts.flagged,
              std::vector<std::uint64_t>{0xF1A6ull});
    auto many = report(l);
    for (std::uint64_t t = 1; t <= room::max_flagged_tickets + 10; ++t) {
        many.deltas.flag(t << 20);
    }
    auto g = ledger.sync("b", "dc", many, t0 + 20'000, 60'000);
    EXPECT_EQ(g.counts.flagged.size(), room::max_flagged_tickets);
    EXPECT_TRUE(std::binary_search(g.counts.flagged.begin(), g.counts.flagged.end(),
                                   std::uint64_t{0xF1A6}) == false)
        << "the oldest goes first";
    // Refused for as long as a cookie carrying it could keep a place, then forgotten.
    EXPECT_TRUE(
        ledger.sync("a", "dc", report(l), t0 + 20'000 + 700'000, 60'000).counts.flagged.empty());
}

// Visitors still counted in a waiting window when it lapses stopped refreshing: the sync that
// finds the window lapsed reports them, once, whichever node it comes from.
TEST(Ledger, ReportsTheVisitorsOfALapsedWaitingWindowOnceAsAbandoned) {
    room_ledger ledger;
    auto l = limits(100, 100);  // a waiting window lives window + abandon_after = 35 s
    auto a = report(l);
    check_in(a.deltas, 1, 4, t0, t0);           // four queued on node a
    check_in(a.deltas, 1, 1, t0, t0 + 10'000);  // one of them moves on...
    auto b = report(l);
    check_in(b.deltas, 1, 1, t0, t0 + 10'000);  // ...and a copy of it through node b
    check_in(b.deltas, 11, 2, t0 + 10'000, t0);
    check_in(b.deltas, 11, 1, t0 + 10'000, t0);  // a replayed copy: the same ticket
    EXPECT_EQ(ledger.sync("a", "dc", a, t0 + 1'000, 60'000).abandoned, 0);
    EXPECT_EQ(ledger.sync("b", "dc", b, t0 + 2'000, 60'000).abandoned, 0);
    // At t0 + 35 s the windows of t0 lapse: 3 left in (t0, t0), 2 in (t0 + 10 s, t0).
    auto g = ledger.sync("b", "dc", report(l), t0 + 35'000, 60'000);
    EXPECT_EQ(g.abandoned, 5);
    EXPECT_EQ(ledger.sync("a", "dc", report(l), t0 + 35'500, 60'000).abandoned, 0);
    // The window of t0 + 10 s lapses 10 s later, with its one visitor.
    EXPECT_EQ(ledger.sync("a", "dc", report(l), t0 + 45'000, 60'000).abandoned, 1);
    ASSERT_TRUE(ledger.sync("a", "dc", report(l), t0 + 46'000, 60'000).counts.waiting.empty());
}

TEST(Ledger, ARevocationReportedByEveryNodeFreesOnePlace) {
    room_ledger ledger;
    auto l = limits(10, 100);
    auto in = report(l);
    in.deltas.active.add(t0, 5);
    ledger.sync("a", "dc", in, t0 + 100, 60'000);
    const std::uint64_t ticket = 0xfedc'ba98'7654'3210ull;
    for (int i = 0; i < 6; ++i) {
        auto r = report(l);
        r.deltas.revoke({ticket, t0});
        auto g = ledger.sync(i % 2 == 0 ? "a" : "b", "dc", r, t0 + 200 + i, 60'000);
        EXPECT_EQ(g.counts.active, 4) << i;
        EXPECT_EQ(g.counts.revoked, std::vector<std::uint64_t>{ticket}) << i;
    }
}

TEST(Ledger, ARevocationOfADeadWindowFreesNothingButIsRefused) {
    room_ledger ledger;
    auto l = limits(10, 100);
    auto in = report(l);
    in.deltas.active.add(t0, 3);
    ledger.sync("a", "dc", in, t0 + 100, 60'000);
    auto r = report(l);
    r.deltas.revoke({7, -1});
    auto g = ledger.sync("a", "dc", r, t0 + 200, 60'000);
    EXPECT_EQ(g.counts.active, 3);
    EXPECT_EQ(g.counts.revoked, std::vector<std::uint64_t>{7});
}

// A node that only knows of a revoked ticket from the store's list re-reports it without a
// window (-1); the node that revoked it names the window. Whichever comes first, the place is
// freed once.
TEST(Ledger, ARevocationWithoutAWindowLeavesTheRevokersToFreeThePlaceOnce) {
    room_ledger ledger;
    auto l = limits(10, 100);
    auto in = report(l);
    in.deltas.active.add(t0, 5);
    ledger.sync("a", "dc", in, t0 + 100, 60'000);
    const std::uint64_t ticket = 42;
    std::vector<std::int64_t> active;
    for (auto [node, window] : std::vector<std::pair<std::string, std::int64_t>>{
             {"b", -1}, {"a", t0}, {"b", -1}, {"a", t0}, {"b", t0}}) {
        auto r = report(l);
        r.deltas.revoke({ticket, window});
        auto g = ledger.sync(node, "dc", r, t0 + 200, 60'000);
        EXPECT_EQ(g.counts.revoked, std::vector<std::uint64_t>{ticket});
        active.push_back(g.counts.active);
    }
    EXPECT_EQ(active, (std::vector<std::int64_t>{5, 4, 4, 4, 4}));
}

TEST(Ledger, RemembersAtMostTheBoundOfRevokedSessions) {
    room_ledger ledger;
    auto l = limits(10'000, 10'000);
    auto in = report(l);
    in.deltas.active.add(t0, 6000);
    ledger.sync("a", "dc", in, t0 + 100, 60'000);
    auto r = report(l);
    for (std::uint64_t t = 1; t <= room::max_revoked_sessions + 10; ++t) {
        r.deltas.revoke({t, t0});
    }
    auto g = ledger.sync("a", "dc", r, t0 + 200, 60'000);
    EXPECT_EQ(g.counts.revoked.size(), room::max_revoked_sessions);
    // Past the bound a revoke frees nothing early: it could not be told from its replays.
    EXPECT_EQ(g.counts.active, 6000 - static_cast<std::int64_t>(room::max_revoked_sessions));
}

TEST(Ledger, ForgetsTheOldestRefusedTicketsFirstWhenFull) {
    room_ledger ledger;
    auto l = limits(10'000, 10'000);
    auto in = report(l);
    in.deltas.active.add(t0, 6000);
    ledger.sync("a", "dc", in, t0 + 100, 60'000);
    // Full with tickets 1..max, one window apart in two halves.
    const std::uint64_t half = room::max_revoked_sessions / 2;
    auto first = report(l);
    for (std::uint64_t t = 1; t <= half; ++t) {
        first.deltas.revoke({t, -1});
    }
    ledger.sync("a", "dc", first, t0 + 200, 60'000);
    auto second = report(l);
    for (std::uint64_t t = half + 1; t <= room::max_revoked_sessions; ++t) {
        second.deltas.revoke({t, -1});
    }
    ledger.sync("a", "dc", second, t0 + 10'200, 60'000);
    // Ten more (a queue place spent, a session revoked): remembered, in place of the ten
    // oldest.
    auto more = report(l);
    for (std::uint64_t t = 1'000'001; t <= 1'000'010; ++t) {
        more.deltas.revoke({t, t0});
    }
    auto g = ledger.sync("a", "dc", more, t0 + 20'200, 60'000);
    const auto& list = g.counts.revoked;
    ASSERT_EQ(list.size(), room::max_revoked_sessions);
    EXPECT_TRUE(std::binary_search(list.begin(), list.end(), 1'000'010u));
    EXPECT_TRUE(std::binary_search(list.begin(), list.end(), 1'000'001u));
    EXPECT_FALSE(std::binary_search(list.begin(), list.end(), 10u));
    EXPECT_TRUE(std::binary_search(list.begin(), list.end(), 11u));
    EXPECT_TRUE(std::binary_search(list.begin(), list.end(), half + 1));
    EXPECT_EQ(g.counts.active, 6000 - 10);  // the new revocations freed their places
}

}  // namespace
}  // namespace waitroom::state
