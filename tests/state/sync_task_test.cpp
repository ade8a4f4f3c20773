// The node side: workers' deltas merge into one sync, the snapshot is published, leases and
// top-ups feed the shared slot pool, failures keep the deltas and lapse the lease.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/state/error.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

#include "state/store_doubles.hpp"
#include "support/decide.hpp"

namespace waitroom::state {
namespace {

using test::make_engine;
using test::make_two_room_engine;
using test::scripted_store;
using test::t0;

// Visitors asked for `n` slots since the last sync. A lease follows recent demand, so a node
// that saw none leases nothing; tests about what a lease holds make the node busy first.
void add_demand(room::node_state& node, std::int64_t n) {
    room::delta_set d;
    d["shop"].demand = n;
    node.submit(d);
}

// A new visitor's request; one queued comes back with the cookie it was given (it is counted
// from then on).
room::decision decide(room::engine& e, room::worker_state& ws, sync_task& sync, std::int64_t now,
                      room::rng& rng) {
    auto top_up = [&] { sync.top_up("shop", now, [](bool) {}); };
    room::decision d = test::decide_with_top_ups(e, e.rooms()[0], ws, nullptr, now, rng, top_up);
    if (d.what != room::action::queue) {
        return d;
    }
    const auto given = d.cookie;
    return test::decide_with_top_ups(e, e.rooms()[0], ws, &given, now, rng, top_up);
}

TEST(SyncTask, TwoWorkersOnOneNodeAdmitExactlyTheLimitAndTheirDeltasMerge) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    local_store st;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    sync.run_once(t0);
    room::worker_state w1(node), w2(node);
    room::rng rng(1);
    int admitted = 0;
    // Uneven traffic: 7 visitors on one worker for every 1 on the other (Cloudflare's case).
    for (int i = 0; i < 16; ++i) {
        auto& w = (i % 8 == 7) ? w2 : w1;
        if (decide(*eng, w, sync, t0 + 100 + i, rng).what == room::action::admit) {
            ++admitted;
        } else {
            EXPECT_GE(admitted, 10) << "queued below the limit at visitor " << i;
        }
    }
    EXPECT_EQ(admitted, 10);
    w1.flush();
    w2.flush();
    std::uint64_t before = node.version();
    sync.run_once(t0 + 1000);
    EXPECT_EQ(node.version(), before + 1);
    const room::room_state* rs = node.snapshot()->find("shop");
    ASSERT_NE(rs, nullptr);
    EXPECT_EQ(rs->counts().active, 10);
    EXPECT_EQ(rs->counts().admitted_last_minute, 10);
    EXPECT_EQ(rs->waiting_total(), 6);
    EXPECT_EQ(rs->free_capacity(), 0);
    EXPECT_EQ(st.held_total("shop"), 0);
}

TEST(SyncTask, LeaseCoversTheFreeCapacityOfASingleNode) {
    auto eng = make_engine(25, 100);
    room::node_state node;
    local_store st;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    add_demand(node, 100);
    sync.run_once(t0);
    EXPECT_EQ(node.pool("shop").available(), 25);
    EXPECT_EQ(st.held_total("shop"), 25);
}

TEST(SyncTask, FailedSyncKeepsTheDeltasForTheNextOne) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    scripted_store st;
    st.hold_calls = true;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    add_demand(node, 100);
    sync.run_once(t0);
    st.release_all();
    room::worker_state w(node);
    room::rng rng(1);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(decide(*eng, w, sync, t0 + 10, rng).what, room::action::admit);
    }
    w.flush();
    st.down = true;
    std::error_code got;
    sync.run_once(t0 + 1000, [&](std::error_code ec) { got = ec; });
    st.release_all();
    EXPECT_EQ(got, make_error_code(errc::unavailable));
    st.down = false;
    sync.run_once(t0 + 1500, [&](std::error_code ec) { got = ec; });
    st.release_all();
    EXPECT_FALSE(got);
    EXPECT_EQ(node.snapshot()->find("shop")->counts().active, 3);
}

// redis_store answers a pipelined sync of several rooms with errc::protocol when one room's
// reply is an error, though the others' scripts ran: their handed-back slots are the store's
// again. The node must not put them in its pool too, or both it and the nodes the store leases
// them to admit from them.
TEST(SyncTask, AnAnswerThatDidNotParseIsOfUnknownOutcomeAndHoldsNoSlotTheStoreTookBack) {
    auto eng = make_engine(20, 1000, std::chrono::minutes{5});
    local_store shared;
    scripted_store sa(shared), sb(shared);
    room::node_state na, nb;
    sync_options oa, ob;
    oa.node_id = "a";
    ob.node_id = "b";
    sync_task a(na, sa, oa), b(nb, sb, ob);
    a.set_engine(eng);
    b.set_engine(eng);
    room::worker_state wa(na), wb(nb);
    room::rng rng(1);
    int admitted = 0;
    auto visit = [&](room::worker_state& w, sync_task& s, std::int64_t now) {
        if (decide(*eng, w, s, now, rng).what == room::action::admit) {
            ++admitted;
        }
    };
    std::int64_t now = t0;
    a.run_once(now);
    b.run_once(now);
    // Node a is busy for a few intervals (it leases), node b quiet.
    for (int k = 0; k < 3; ++k) {
        visit(wa, a, now + 10);
        visit(wa, a, now + 11);
        wa.flush();
        now += 1000;
        a.run_once(now);
        b.run_once(now);
    }
    ASSERT_GT(na.pool("shop").available(), 0) << "the case needs slots in a's pool";
    // a's next sync hands its unused slots back; the store applies it, the answer fails.
    now += 1000;
    sa.lose_next = true;
    sa.lose_with = make_error_code(errc::protocol);
    std::error_code got;
    a.run_once(now, [&](std::error_code ec) { got = ec; });
    EXPECT_EQ(got, make_error_code(errc::protocol));
    b.run_once(now);
    // Everyone floods both nodes: never more than the limit across them.
    for (int i = 0; i < 200; ++i) {
        visit(wa, a, now + 10 + i);
        visit(wb, b, now + 10 + i);
    }
    EXPECT_LE(admitted, 20);
    // The resend (same batch) is answered, counting nothing twice; the new deltas follow in
    // the next batch.
    wa.flush();
    wb.flush();
    for (int k = 0; k < 2; ++k) {
        now += 1000;
        a.run_once(now);
        b.run_once(now);
    }
    EXPECT_EQ(nb.snapshot()->find("shop")->counts().active, admitted);
}

// A new visitor to room `k` of `e`, with a top-up when the pool is dry: true if admitted.
bool admit_to(room::engine& e, std::size_t k, room::worker_state& ws, sync_task& sync,
              std::int64_t now, room::rng& rng) {
    const room::compiled_room& r = e.rooms()[k];
    return test::decide_with_top_ups(e, r, ws, nullptr, now, rng, [&] {
               sync.top_up(r.id(), now, [](bool) {});
           }).what == room::action::admit;
}

// One room's answer lost alone (its script ran, its reply was an error): that room goes again
// under its batch and counts once, while the other room's new deltas go in the same sync. Before,
// the whole sync was resent and the healthy room's new deltas waited one interval; past the
// lease TTL everything was merged back and the healthy room's applied deltas counted twice.
TEST(SyncTask, ARoomWhoseAnswerIsLostAloneIsResentUnderItsBatchWhileTheOthersSyncOn) {
    auto eng = make_two_room_engine(100, 100);
    local_store shared;
    test::room_failing_store st(shared);
    room::node_state node;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(1);
    sync.run_once(t0);
    auto admit_n = [&](std::size_t k, int n, std::int64_t now) {
        for (int i = 0; i < n; ++i) {
            ASSERT_TRUE(admit_to(*eng, k, w, sync, now + i, rng));
        }
        w.flush();
    };
    const auto& shop = eng->rooms()[0].limits_at(t0);
    const auto& bad = eng->rooms()[1].limits_at(t0);
    admit_n(0, 3, t0 + 100);
    admit_n(1, 3, t0 + 100);
    st.lose.insert("bad");
    std::error_code ec = make_error_code(errc::busy);
    sync.run_once(t0 + 1'000, [&](std::error_code e) { ec = e; });
    EXPECT_FALSE(ec) << "the sync settled shop: " << ec.message();
    EXPECT_EQ(shared.counts("bad", bad, t0 + 1'000).admitted_last_minute, 3);
    EXPECT_EQ(sync.room_failures("bad"), 1u);
    EXPECT_EQ(sync.room_failures("shop"), 0u);

    for (int k = 0; k < 4; ++k) {
        const std::int64_t now = t0 + 2'000 + 1'000 * k;
        admit_n(0, 2, now - 500);
        admit_n(1, 2, now - 500);
        sync.run_once(now, [&](std::error_code e) { ec = e; });
        EXPECT_FALSE(ec) << ec.message();
        // Every sync brings shop's new admissions at once; bad's resend counts nothing twice,
        // and its new admissions follow in its next report.
        EXPECT_EQ(shared.counts("shop", shop, now).admitted_last_minute, 5 + 2 * k);
        EXPECT_EQ(shared.counts("bad", bad, now).admitted_last_minute,
                  3 + 2 * (k == 0 ? 0 : k + 1));
        EXPECT_EQ(node.snapshot()->find("shop")->counts().admitted_last_minute, 5 + 2 * k);
    }
    EXPECT_EQ(sync.room_failures("bad"), 1u);
    EXPECT_FALSE(sync.degraded(t0 + 5'000));
}

// Redis refuses one room's writes (a clobbered key) at every sync, on both nodes, for many lease
// TTLs: the other room's counts stay exact on both nodes; the failing room admits from its own
// degraded allowance, within its limits across the nodes; once the key is fixed the room settles
// and every admission is counted once. The operator hears of it once each way.
TEST(SyncTask, ARoomTheStoreKeepsFailingDegradesAloneAndTheOthersStayExact) {
    auto eng = make_two_room_engine(1000, 20);
    local_store shared;
    test::room_failing_store sa(shared), sb(shared);
    room::node_state na, nb;
    sync_options oa, ob;
    oa.node_id = "a";
    ob.node_id = "b";
    sync_task a(na, sa, oa), b(nb, sb, ob);
    a.set_engine(eng);
    b.set_engine(eng);
    std::vector<std::string> heard;
    auto listen = [&](const std::string& node) {
        return [&heard, node](const std::string& room, bool failing, std::error_code ec) {
            heard.push_back(node + " " + room + (failing ? " failing " + ec.message() : " ok"));
        };
    };
    a.on_room_failing(listen("a"));
    b.on_room_failing(listen("b"));
    room::worker_state wa(na), wb(nb);
    room::rng rng(7);
    int shop_in = 0;
    int bad_in = 0;
    std::int64_t now = t0;
    auto tick = [&] {
        for (int i = 0; i < 6; ++i) {
            shop_in +=
                admit_to(*eng, 0, i % 3 == 0 ? wb : wa, i % 3 == 0 ? b : a, now + 10 + i, rng);
            bad_in += admit_to(*eng, 1, wa, a, now + 20 + i, rng);
            bad_in += admit_to(*eng, 1, wb, b, now + 30 + i, rng);
        }
        wa.flush();
        wb.flush();
        now += 1'000;
        a.run_once(now);
        b.run_once(now);
    };
    const auto shop = eng->rooms()[0].limits_at(t0);
    const auto bad = eng->rooms()[1].limits_at(t0);
    a.run_once(now);
    b.run_once(now);
    tick();  // bad admits 12 of its 20 places
    ASSERT_EQ(bad_in, 12);
    sa.refuse.insert("bad");
    sb.refuse.insert("bad");
    for (int k = 0; k < 12; ++k) {  // six lease TTLs
        tick();
        EXPECT_EQ(shared.counts("shop", shop, now).admitted_last_minute, shop_in) << "tick " << k;
        // (node b syncs last: its snapshot has everything)
        EXPECT_EQ(nb.snapshot()->find("shop")->counts().admitted_last_minute, shop_in);
        EXPECT_EQ(nb.snapshot()->find("shop")->counts().active, shop_in);
        EXPECT_LE(bad_in, 20) << "tick " << k;
    }
    EXPECT_GT(bad_in, 12) << "the failing room admits from its degraded allowance";
    EXPECT_TRUE(a.degraded_room("bad").active);
    EXPECT_FALSE(a.degraded_room("shop").active);
    EXPECT_FALSE(a.degraded(now));
    EXPECT_EQ(a.degraded_since_ms(), 0);
    EXPECT_EQ(a.failed_syncs(), 0u);
    // (one more than the ticks: a visitor finding the lapsed lease runs a sync of its own)
    const std::uint64_t failures = a.room_failures("bad");
    EXPECT_GE(failures, 12u);
    EXPECT_LE(failures, 13u);
    EXPECT_EQ(shared.counts("bad", bad, now).admitted_last_minute, 12);
    ASSERT_EQ(heard.size(), 2u);
    EXPECT_EQ(heard[0], "a bad failing " + make_error_code(errc::room_failed).message());

    sa.refuse.clear();
    sb.refuse.clear();
    for (int k = 0; k < 4; ++k) {
        tick();
        EXPECT_LE(bad_in, 20);
    }
    EXPECT_FALSE(a.degraded_room("bad").active);
    EXPECT_FALSE(b.degraded_room("bad").active);
    EXPECT_EQ(a.room_failures("bad"), failures);
    EXPECT_EQ(shared.counts("bad", bad, now).admitted_last_minute, bad_in);
    EXPECT_EQ(shared.counts("bad", bad, now).active, bad_in);
    EXPECT_EQ(shared.counts("shop", shop, now).admitted_last_minute, shop_in);
    EXPECT_EQ(heard.size(), 4u);
    EXPECT_EQ(heard.back(), "b bad ok");
}

// A node of rooms "shop" and "bad", whose store fails "bad" alone until told otherwise; a
// reload removes "bad" with remove_bad().
struct failing_bad_room {
    std::shared_ptr<const room::engine> current = make_two_room_engine(100, 100);
    local_store shared;
    test::room_failing_store st{shared};
    room::node_state node;
    sync_task sync{node, st, {}};

    failing_bad_room() {
        sync.follow_engine([this] { return current; });
        st.refuse.insert("bad");
    }
    void remove_bad() { current = make_engine(100, 100); }
};

// A room the store fails alone and a reload then removes: its report goes once more (the store
// may have applied it), and when that fails too it is dropped, not resent for ever.
TEST(SyncTask, AFailingRoomThatAReloadRemovedIsDroppedAfterOneMoreTry) {
    failing_bad_room f;
    auto& st = f.st;
    auto& sync = f.sync;
    auto run = [&](std::int64_t now) {
        const int before = st.failed_rooms;
        std::error_code ec = make_error_code(errc::busy);
        sync.run_once(now, [&](std::error_code e) { ec = e; });
        EXPECT_FALSE(ec) << ec.message();
        return st.failed_rooms - before;
    };
    EXPECT_EQ(run(t0), 1);
    EXPECT_EQ(run(t0 + 1'000), 1);
    EXPECT_TRUE(sync.failing_alone("bad"));
    f.remove_bad();
    EXPECT_EQ(run(t0 + 2'000), 1);  // once more
    EXPECT_EQ(run(t0 + 3'000), 0);  // then gone
    EXPECT_FALSE(sync.failing_alone("bad"));
    EXPECT_EQ(run(t0 + 4'000), 0);
    EXPECT_EQ(st.sync_calls, 5);
}

// Places given behind (a later arrival bucket let in while older ones waited) are taken off the
// snapshot's free capacity until a store answer holds them (room::slot_pool::reported_behind).
// A room a reload removed gets no answer that will ever hold them: they count as reported once,
// whichever way its last report ends, so the room, added back, does not lose those places.
void give_behind(room::node_state& node, const std::string& room, std::int64_t n) {
    room::delta_set d;
    d[room].demand = n;
    d[room].taken_behind = n;
    node.submit(d);
}

TEST(SyncTask, PlacesGivenBehindInARemovedRoomWhoseLastReportFailsCountOnce) {
    failing_bad_room f;
    auto& node = f.node;
    auto& sync = f.sync;
    give_behind(node, "bad", 2);
    give_behind(node, "shop", 1);
    sync.run_once(t0);
    EXPECT_EQ(node.pool("shop").reported_behind(), 1);
    EXPECT_EQ(node.pool("bad").reported_behind(), 0) << "no answer holds them yet";
    sync.run_once(t0 + 1'000);
    EXPECT_EQ(node.pool("bad").reported_behind(), 0);
    f.remove_bad();  // its report goes once more, and fails
    sync.run_once(t0 + 2'000);
    EXPECT_EQ(node.pool("bad").reported_behind(), 2);
    sync.run_once(t0 + 3'000);
    sync.run_once(t0 + 4'000);
    EXPECT_EQ(node.pool("bad").reported_behind(), 2);
    EXPECT_EQ(node.pool("shop").reported_behind(), 1);
}

TEST(SyncTask, PlacesGivenBehindInARoomRemovedAfterAWholeSyncFailedCountOnce) {
    auto both = make_two_room_engine(100, 100);
    std::shared_ptr<const room::engine> current = both;
    scripted_store st;
    room::node_state node;
    sync_task sync(node, st, {});
    sync.follow_engine([&] { return current; });
    sync.run_once(t0);
    give_behind(node, "bad", 2);
    st.down = true;
    sync.run_once(t0 + 1'000);  // the deltas stay for the next sync
    EXPECT_EQ(node.pool("bad").reported_behind(), 0);
    st.down = false;
    current = make_engine(100, 100);
    sync.run_once(t0 + 2'000);
    EXPECT_EQ(node.pool("bad").reported_behind(), 2);
    sync.run_once(t0 + 3'000);
    EXPECT_EQ(node.pool("bad").reported_behind(), 2);
}

TEST(SyncTask, ARunWhileOneIsInFlightIsSkipped) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    scripted_store st;
    st.hold_calls = true;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    sync.run_once(t0);
    std::error_code second;
    sync.run_once(t0 + 1, [&](std::error_code ec) { second = ec; });
    EXPECT_EQ(second, make_error_code(errc::busy));
    EXPECT_EQ(st.sync_calls, 1);
    st.release_all();
    EXPECT_EQ(sync.syncs(), 1u);
}

TEST(SyncTask, LapsedLeaseIsNotUsedAndGoesBackWhenTheStoreReturns) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    scripted_store st;
    st.hold_calls = true;
    sync_options opt;
    opt.lease_ttl_ms = 2000;
    opt.degraded_allowance = false;  // the lapsed lease alone (allowance: Degraded tests)
    sync_task sync(node, st, opt);
    sync.set_engine(eng);
    add_demand(node, 100);
    sync.run_once(t0);
    st.release_all();
    auto& pool = node.pool("shop");
    EXPECT_TRUE(pool.try_take(t0 + 1999));  // one admission, never reported below
    EXPECT_FALSE(pool.try_take(t0 + 2000));
    st.down = true;
    sync.run_once(t0 + 2500);
    st.release_all();
    EXPECT_TRUE(sync.degraded(t0 + 2500));
    EXPECT_FALSE(pool.try_take(t0 + 2600));
    // Back within the store's node TTL: the lapsed 9 are returned, a fresh lease granted, and
    // the store never counts more than the capacity as held. Leaving degraded mode, the node
    // says exactly what it holds of the store's lease (nothing) and what it admitted without
    // reporting it yet (the slot taken before the lease lapsed): the store's count is then that
    // slot and the fresh lease, of which one slot was taken since (not reported yet either).
    st.down = false;
    sync.run_once(t0 + 2800);
    st.release_all();
    EXPECT_FALSE(sync.degraded(t0 + 2800));
    EXPECT_EQ(st.inner.held_total("shop"), pool.available() + 1);
    EXPECT_TRUE(pool.try_take(t0 + 2900));
    EXPECT_LE(st.inner.held_total("shop"), 10);
    EXPECT_EQ(pool.available() + 2, st.inner.held_total("shop"));
}

// One node on a scripted store (holding its calls until release_all() unless told otherwise),
// a room of 10 and 100 a minute, a lease TTL of 2 s.
struct lease_of_2s {
    explicit lease_of_2s(bool hold, bool allowance = true) : sync(node, st, options(allowance)) {
        st.hold_calls = hold;
        sync.set_engine(eng);
    }
    static sync_options options(bool allowance) {
        sync_options o;
        o.lease_ttl_ms = 2000;
        o.degraded_allowance = allowance;
        return o;
    }
    std::shared_ptr<room::engine> eng = make_engine(10, 100);
    room::node_state node;
    scripted_store st;
    sync_task sync;
};

// A sync that is only late (the timer held back on a loaded machine) says nothing of the store:
// the node is not degraded, and /readyz stays ready, until a sync past the lease TTL fails.
TEST(SyncTask, ALateSyncIsNotDegradedUntilTheStoreFailsOne) {
    lease_of_2s n(false);
    n.sync.run_once(t0);
    EXPECT_FALSE(n.sync.degraded(t0 + 2001));
    EXPECT_FALSE(n.sync.degraded(t0 + 60'000));
    n.st.down = true;
    n.sync.run_once(t0 + 1000);  // within the lease: the next sync may well succeed
    EXPECT_FALSE(n.sync.degraded(t0 + 1000));
    EXPECT_TRUE(n.sync.degraded(t0 + 2001));
    n.sync.run_once(t0 + 2500);
    EXPECT_TRUE(n.sync.degraded(t0 + 2500));
    n.st.down = false;
    n.sync.run_once(t0 + 3000);
    EXPECT_FALSE(n.sync.degraded(t0 + 60'000));
}

// A store that keeps a sync in flight for longer than the lease TTL (one that hangs, or answers
// too slowly for the lease it renews) is degraded without a failure.
TEST(SyncTask, ASyncInFlightLongerThanTheLeaseIsDegraded) {
    lease_of_2s n(true);
    n.sync.run_once(t0);
    n.st.release_all();
    n.sync.run_once(t0 + 1000);                // no answer yet
    EXPECT_FALSE(n.sync.degraded(t0 + 2500));  // the lease ran out, but the sync is 1.5 s old
    EXPECT_FALSE(n.sync.degraded(t0 + 3000));
    EXPECT_TRUE(n.sync.degraded(t0 + 3001));
    n.st.release_all();
    EXPECT_FALSE(n.sync.degraded(t0 + 3001));
}

// A visitor's top-up in a room whose lease lapsed meets the timer's sync in flight (at startup,
// or behind a timer late on a loaded machine): it waits for that sync's answer, then tops up,
// instead of taking "busy" for an empty store and queueing the visitor in a room with room.
TEST(SyncTask, ATopUpThatFindsTheSyncInFlightWaitsForItsAnswer) {
    lease_of_2s n(true, false);  // no allowance: a failed sync leaves the lease lapsed (below)
    n.sync.run_once(t0);
    n.st.release_all();
    auto& pool = n.node.pool("shop");
    EXPECT_EQ(pool.available(), 0);  // an idle node leases nothing
    n.sync.run_once(t0 + 2500);      // the timer's sync, out past the lease
    ASSERT_TRUE(pool.expired(t0 + 2500));
    int answers = 0;
    bool got = false;
    n.sync.top_up("shop", t0 + 2500, [&](bool g) { ++answers, got = g; });
    EXPECT_EQ(answers, 0);  // waiting for the sync in flight
    EXPECT_EQ(n.st.sync_calls, 2);
    n.st.release_all();  // the sync renews the lease (empty): the top-up follows it
    EXPECT_EQ(answers, 0);
    EXPECT_EQ(n.st.top_up_calls, 1);
    n.st.release_all();
    EXPECT_EQ(answers, 1);
    EXPECT_TRUE(got);
    EXPECT_TRUE(pool.try_take(t0 + 2500));

    // When the sync it waited for fails, the node is in degraded mode: the top-up answers
    // "nothing" at once (no allowance here), and calls the store no more.
    n.sync.run_once(t0 + 5000);
    ASSERT_TRUE(pool.expired(t0 + 5000));
    n.st.down = true;
    n.sync.top_up("shop", t0 + 5000, [&](bool g) { ++answers, got = g; });
    EXPECT_EQ(answers, 1);
    n.st.release_all();
    EXPECT_EQ(answers, 2);
    EXPECT_FALSE(got);
    EXPECT_TRUE(n.sync.degraded(t0 + 5000));
    EXPECT_EQ(n.st.sync_calls, 3);
    EXPECT_EQ(n.st.top_up_calls, 1);
}

// A top-up parked on one sync goes on when that sync ends, not when an older one does: here the
// old sync's caller starts the next sync at once (as the timer may, late), and a top-up finds it
// in flight before the old sync has finished its own answer. Woken early, it found the lease
// still lapsed and the new sync busy, and answered "nothing" in a room with room.
TEST(SyncTask, ATopUpParkedOnASyncIsWokenByThatSyncsAnswer) {
    lease_of_2s n(true);
    n.sync.run_once(t0);
    n.st.release_all();
    int answers = 0;
    bool got = false;
    const std::int64_t later = t0 + 10'000;  // past the lease the old sync renews
    n.sync.run_once(t0 + 500, [&](std::error_code) {
        n.sync.run_once(later);  // the next sync, held
        n.sync.top_up("shop", later, [&](bool g) { ++answers, got = g; });
    });
    n.st.release_all();  // the old sync answers; the next one is still out
    EXPECT_EQ(answers, 0);
    n.st.release_all();  // the next sync renews the lease (empty: an idle node): the top-up follows
    EXPECT_EQ(answers, 0);
    EXPECT_EQ(n.st.top_up_calls, 1);
    n.st.release_all();
    EXPECT_EQ(answers, 1);
    EXPECT_TRUE(got);
    EXPECT_EQ(n.st.sync_calls, 3);  // no renewal of its own: the next sync renewed the lease
}

// The top-ups waiting for the sync in flight are bounded: past the bound one answers "nothing"
// at once, as before it could wait, and the sync's answer lets every one parked go on.
TEST(SyncTask, TopUpsWaitingForTheSyncInFlightAreBounded) {
    lease_of_2s n(true);
    add_demand(n.node, 100);
    n.sync.run_once(t0);
    n.st.release_all();
    n.sync.run_once(t0 + 2500);  // out past the lease
    std::size_t yes = 0;
    std::size_t no = 0;
    for (std::size_t i = 0; i <= sync_task::max_after_flight; ++i) {
        n.sync.top_up("shop", t0 + 2500, [&](bool g) { ++(g ? yes : no); });
    }
    EXPECT_EQ(no, 1u);
    EXPECT_EQ(yes, 0u);
    n.st.release_all();  // the renewed lease holds slots: every waiter goes on
    EXPECT_EQ(yes + no, sync_task::max_after_flight + 1);
    EXPECT_EQ(yes, sync_task::max_after_flight);
}

TEST(SyncTask, ConcurrentTopUpsShareOneStoreCall) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    scripted_store st;
    st.hold_calls = true;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    add_demand(node, 100);
    sync.run_once(t0);
    st.release_all();
    node.pool("shop").take_up_to(10);  // dry pool; the store still counts them held
    int answers = 0;
    bool any = true;
    sync.top_up("shop", t0 + 10, [&](bool g) { ++answers, any = any && g; });
    sync.top_up("shop", t0 + 10, [&](bool g) { ++answers, any = any && g; });
    EXPECT_EQ(st.top_up_calls, 1);
    EXPECT_EQ(answers, 0);  // waiting asynchronously
    st.release_all();
    EXPECT_EQ(answers, 2);
    EXPECT_FALSE(any);  // nothing is free beyond the lease
}

TEST(SyncTask, TopUpsBeforeTheNextSyncAskForTwiceThePreviousOne) {
    auto eng = make_engine(1000, 1000);
    room::node_state node;
    local_store st;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    sync.run_once(t0);
    auto& pool = node.pool("shop");
    EXPECT_EQ(pool.available(), 0);  // no demand yet: everything stays free in the store
    std::vector<std::int64_t> got;
    for (int i = 0; i < 4; ++i) {
        pool.take_up_to(pool.available());  // a spike drains the pool each time
        sync.top_up("shop", t0 + 100 + i, [](bool) {});
        got.push_back(pool.available());
    }
    EXPECT_EQ(got, (std::vector<std::int64_t>{1, 2, 4, 8}));
    sync.run_once(t0 + 1000);  // the lease now follows the demand: top-ups start small again
    pool.take_up_to(pool.available());
    sync.top_up("shop", t0 + 1100, [](bool) {});
    EXPECT_EQ(pool.available(), 1);
}

TEST(SyncTask, TopUpAsksAgainForTheVisitorsWhoJoinedItsCall) {
    auto eng = make_engine(1000, 1000);
    room::node_state node;
    scripted_store st;
    st.hold_calls = true;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    sync.run_once(t0);
    st.release_all();
    auto& pool = node.pool("shop");
    pool.take_up_to(pool.available());
    int answers = 0;
    for (int i = 0; i < 3; ++i) {
        sync.top_up("shop", t0 + 10, [&](bool g) { answers += g ? 1 : 0; });
    }
    EXPECT_EQ(st.top_up_calls, 1);
    st.release_all();  // 1 slot for 3 visitors, and the store gave all it was asked: ask again
    EXPECT_EQ(st.top_up_calls, 2);
    EXPECT_EQ(answers, 0);
    st.release_all();
    EXPECT_EQ(answers, 3);
    // Each call says how many visitors wait for it: the first one, then the two left short.
    ASSERT_EQ(st.top_up_requests.size(), 2u);
    EXPECT_EQ(st.top_up_requests[0].need, 1);
    EXPECT_EQ(st.top_up_requests[1].need, 2);
    EXPECT_EQ(pool.available(), 3);
    EXPECT_EQ(st.inner.held_total("shop"), 3);  // all from top-ups, not yet reported used
}

TEST(SyncTask, TopUpAddsSlotsWhenCapacityFreedSinceTheLastSync) {
    auto eng = make_engine(2, 100, std::chrono::minutes{1});
    room::node_state node;
    local_store st;
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    sync.run_once(t0);
    room::worker_state w(node);
    room::rng rng(1);
    ASSERT_EQ(decide(*eng, w, sync, t0 + 10, rng).what, room::action::admit);
    ASSERT_EQ(decide(*eng, w, sync, t0 + 10, rng).what, room::action::admit);
    w.flush();
    sync.run_once(t0 + 60'500);  // both sessions still count: nothing leased
    EXPECT_EQ(node.pool("shop").available(), 0);
    EXPECT_EQ(decide(*eng, w, sync, t0 + 60'600, rng).what, room::action::queue);
    // Their 1 s window (a sixtieth of the session) ends at 61 s; the next sync is a second
    // away, the top-up is not.
    bool granted = false;
    sync.top_up("shop", t0 + 61'500, [&](bool g) { granted = g; });
    EXPECT_TRUE(granted);
    EXPECT_EQ(node.pool("shop").available(), 2);
    EXPECT_EQ(st.held_total("shop"), 2);
}

TEST(SyncTask, HandsBackTheSlotsThatSatUnusedThroughAnIntervalInItsNextReport) {
    auto eng = make_engine(1000, 200);
    local_store st;
    room::node_state small, big;
    sync_task sync_small(small, st, {.node_id = "small"});
    sync_task sync_big(big, st, {.node_id = "big"});
    sync_small.set_engine(eng);
    sync_big.set_engine(eng);
    add_demand(big, 50);
    sync_big.run_once(t0);
    add_demand(small, 6);
    sync_small.run_once(t0 + 10);
    auto& pool = small.pool("shop");
    const std::int64_t lease = pool.available();
    ASSERT_GT(lease, 0);
    // Visitors use the lease, then a top-up refills the pool: its slots have not sat unused
    // for an interval yet.
    pool.take_up_to(lease);
    room::delta_set used;
    used["shop"].slots_used = lease;
    used["shop"].demand = lease;
    small.submit(used);
    sync_small.top_up("shop", t0 + 500, [](bool) {});
    const std::int64_t topped = pool.available();
    ASSERT_GT(topped, 0);
    // The next report keeps those (the visitors who asked are still coming)...
    sync_small.run_once(t0 + 1010);
    EXPECT_GE(pool.available(), topped);
    // ...and the one after, with nobody asking through a whole interval, hands the whole pool
    // back in the report itself, where a release in the answer would come one interval later:
    // the store holds none of it for this node, free for any node's top-up.
    const std::int64_t held_before = st.held_total("shop");
    const std::int64_t unused = pool.available();
    sync_small.run_once(t0 + 2010);
    EXPECT_EQ(pool.available(), 0);
    EXPECT_EQ(st.held_total("shop"), held_before - unused);
}

TEST(SyncTask, OptionsScaleWithTheSyncInterval) {
    config::config cfg;
    cfg.node.id = "edge-1";
    cfg.state.backend = config::state_backend::redis;
    cfg.state.sync_interval = std::chrono::seconds{2};
    auto o = make_sync_options(cfg);
    EXPECT_EQ(o.node_id, "edge-1");
    EXPECT_EQ(o.interval_ms, 2000);
    EXPECT_LT(o.lease_ttl_ms, o.node_ttl_ms);
    EXPECT_GT(o.lease_ttl_ms, o.interval_ms);
    EXPECT_EQ(o.top_up_retry_ms, 500);  // a quarter interval
    // The local store too: asked per request it tied its load to the request rate.
    cfg.state.backend = config::state_backend::local;
    EXPECT_EQ(make_sync_options(cfg).top_up_retry_ms, 500);
}

// ---- degraded mode (DESIGN.md §4) ----------------------------------------------------------

// Offers `n` new visitors at `now`; returns the admitted ones' cookies.
std::vector<cookie::payload> offer(room::engine& e, room::worker_state& ws, sync_task& sync,
                                   std::int64_t now, int n, room::rng& rng) {
    std::vector<cookie::payload> admitted;
    for (int i = 0; i < n; ++i) {
        auto d = decide(e, ws, sync, now, rng);
        if (d.what == room::action::admit) {
            admitted.push_back(d.cookie);
        }
    }
    return admitted;
}

// One sync interval of a node: its workers flush (flush_timer), then the sync runs.
void tick(room::worker_state& ws, sync_task& sync, std::int64_t now) {
    ws.flush();
    sync.run_once(now);
}

// The most admissions any 60-second span (t − 60 s, t] holds, over a log of admission times.
std::size_t busiest_minute(std::vector<std::int64_t> at) {
    std::sort(at.begin(), at.end());
    std::size_t most = 0;
    for (std::size_t first = 0, last = 0; last < at.size(); ++last) {
        while (at[first] <= at[last] - 60'000) {
            ++first;
        }
        most = std::max(most, last - first + 1);
    }
    return most;
}

void log_admissions(std::vector<std::int64_t>& log, std::size_t n, std::int64_t at) {
    log.insert(log.end(), n, at);
}

TEST(Degraded, NodeKeepsAdmittingFromItsAllowanceButNoMoreThanTheRateInAnyMinute) {
    auto eng = make_engine(1000, 600);  // 10 new visitors per second
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});  // interval 1 s, lease TTL 2 s
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(7);
    tick(w, sync, t0);
    auto before = offer(*eng, w, sync, t0 + 100, 5, rng);
    ASSERT_EQ(before.size(), 5u);
    tick(w, sync, t0 + 500);

    st.down = true;
    const int top_ups_before = st.top_up_calls;  // the quiet node's first lease was 1 slot
    tick(w, sync, t0 + 1500);                    // the lease still holds: not degraded yet
    EXPECT_FALSE(sync.degraded(t0 + 1500));
    EXPECT_EQ(sync.degraded_since_ms(), 0);
    std::int64_t degraded_total = 0;
    std::vector<std::int64_t> log(5, t0 + 100);
    for (int i = 0; i < 70; ++i) {
        const std::int64_t now = t0 + 3000 + i * 1000;
        tick(w, sync, now);
        ASSERT_TRUE(sync.degraded(now));
        ASSERT_NE(sync.degraded_since_ms(), 0);
        // A flood: 200 new visitors a second, twenty times the rate.
        auto got = offer(*eng, w, sync, now + 10, 200, rng);
        log_admissions(log, got.size(), now + 10);
        degraded_total += static_cast<std::int64_t>(got.size());
        // Visitors admitted before the outage keep passing, whatever the pool holds.
        for (const auto& c : before) {
            auto d = eng->decide(eng->rooms()[0], w, &c, now + 20, rng);
            EXPECT_EQ(d.what, room::action::admit);
        }
    }
    // One node alone: its share is the whole limit, 600 in any 60 s span, the 5 admitted just
    // before the outage included; what the minute frees is admitted, not held back.
    EXPECT_LE(busiest_minute(log), 600u);
    EXPECT_GE(degraded_total, 600 - 5 + 400);
    EXPECT_EQ(sync.degraded_room("shop").share, 1.0);
    EXPECT_EQ(sync.degraded_admissions(), static_cast<std::uint64_t>(degraded_total));
    // The dead store is asked once per interval (the sync), never per visitor.
    EXPECT_EQ(st.top_up_calls, top_ups_before);
    EXPECT_EQ(sync.failed_syncs(), 71u);
}

TEST(Degraded, AdmissionsWhileDegradedNeverExceedTheShareOfTheFreeActiveCapacity) {
    auto eng = make_engine(20, 6000);  // the rate allows 100 per second: the active limit binds
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(3);
    tick(w, sync, t0);
    ASSERT_EQ(offer(*eng, w, sync, t0 + 100, 5, rng).size(), 5u);
    add_demand(node, 20);     // busy: the lease covers the free capacity
    tick(w, sync, t0 + 500);  // the store knows 5 active
    ASSERT_EQ(node.snapshot()->find("shop")->counts().active, 5);
    ASSERT_EQ(offer(*eng, w, sync, t0 + 600, 2, rng).size(), 2u);  // not reported yet

    st.down = true;
    tick(w, sync, t0 + 1500);  // fails, but the lease still holds
    ASSERT_EQ(offer(*eng, w, sync, t0 + 1600, 3, rng).size(), 3u);
    std::int64_t degraded_total = 0;
    for (int i = 0; i < 120; ++i) {
        const std::int64_t now = t0 + 3000 + i * 1000;
        tick(w, sync, now);
        ASSERT_TRUE(sync.degraded(now));
        degraded_total += static_cast<std::int64_t>(offer(*eng, w, sync, now + 10, 50, rng).size());
    }
    // 20 − 5 known active − 5 admitted since from the lease: 10 at most, over two minutes of
    // outage, though the rate would allow 100 a second.
    EXPECT_EQ(sync.degraded_room("shop").share, 1.0);
    EXPECT_GT(degraded_total, 0);
    EXPECT_LE(degraded_total, 10);
    EXPECT_EQ(sync.degraded_episodes(), 1u);
}

TEST(Degraded, StoreBackReceivesTheDegradedAdmissionsAndLeasesResume) {
    auto eng = make_engine(1000, 600);
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    std::vector<std::pair<bool, std::int64_t>> changes;
    sync.on_degraded_change([&](bool d, std::int64_t at) { changes.emplace_back(d, at); });
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(5);
    tick(w, sync, t0);
    ASSERT_EQ(offer(*eng, w, sync, t0 + 100, 4, rng).size(), 4u);
    tick(w, sync, t0 + 500);

    st.down = true;
    std::int64_t degraded_total = 0;
    for (int i = 0; i < 4; ++i) {
        const std::int64_t now = t0 + 3000 + i * 1000;
        tick(w, sync, now);
        const int visitors = i < 3 ? 30 : 2;  // the last interval leaves allowance unused
        degraded_total +=
            static_cast<std::int64_t>(offer(*eng, w, sync, now + 10, visitors, rng).size());
    }
    ASSERT_GT(degraded_total, 0);
    // Some admissions are still in the worker when the store returns: they arrive one sync later.
    w.flush();
    const auto late = offer(*eng, w, sync, t0 + 6900, 3, rng).size();
    ASSERT_EQ(late, 3u);
    degraded_total += static_cast<std::int64_t>(late);
    const std::int64_t back = t0 + 7000;
    st.down = false;
    sync.run_once(back);
    EXPECT_EQ(sync.degraded_since_ms(), 0);
    EXPECT_FALSE(sync.degraded(back));
    EXPECT_EQ(sync.consecutive_failures(), 0u);
    w.flush();
    sync.run_once(back + 1000);
    const room::room_limits lim = eng->rooms()[0].limits_at(back + 1000);
    auto counts = inner.counts("shop", lim, back + 1000);
    EXPECT_EQ(counts.active, 4 + degraded_total);
    EXPECT_EQ(counts.admitted_last_minute, 4 + degraded_total);
    // Leasing resumed, and the store counts exactly the slots the node holds: the allowance it
    // never leased did not lower its count, and the lapsed lease went back.
    auto& pool = node.pool("shop");
    EXPECT_GT(pool.available(), 0);
    EXPECT_FALSE(pool.expired(back + 1000));
    EXPECT_EQ(inner.held_total("shop"), pool.available());
    EXPECT_LE(inner.held_total("shop") + counts.admitted_last_minute, 600);
    // Admissions from the new lease keep the store's count exact too.
    EXPECT_EQ(offer(*eng, w, sync, back + 1100, 5, rng).size(), 5u);
    tick(w, sync, back + 2000);
    EXPECT_EQ(inner.held_total("shop"), pool.available());
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_TRUE(changes[0].first);
    EXPECT_EQ(changes[0].second, t0 + 3000);
    EXPECT_FALSE(changes[1].first);
    EXPECT_EQ(changes[1].second, back);
    EXPECT_EQ(sync.degraded_admissions(), static_cast<std::uint64_t>(degraded_total));
}

TEST(Degraded, TwoNodesInTheLastKnownStateEachGetHalf) {
    auto eng = make_engine(40, 600);
    local_store inner;
    scripted_store st(inner);
    room::node_state node_a, node_b;
    sync_options oa, ob;
    oa.node_id = "a";
    ob.node_id = "b";
    sync_task a(node_a, st, oa), b(node_b, st, ob);
    a.set_engine(eng);
    b.set_engine(eng);
    room::worker_state wa(node_a), wb(node_b);
    room::rng rng(11);
    tick(wa, a, t0);
    tick(wb, b, t0);
    tick(wa, a, t0 + 500);  // a now sees both nodes
    ASSERT_EQ(node_a.snapshot()->find("shop")->nodes(), 2u);

    st.down = true;
    std::int64_t total_a = 0, total_b = 0;
    for (int i = 0; i < 60; ++i) {
        const std::int64_t now = t0 + 3000 + i * 1000;
        tick(wa, a, now);
        tick(wb, b, now);
        auto ga = offer(*eng, wa, a, now + 10, 50, rng).size();
        auto gb = offer(*eng, wb, b, now + 10, 50, rng).size();
        total_a += static_cast<std::int64_t>(ga);
        total_b += static_cast<std::int64_t>(gb);
    }
    EXPECT_EQ(a.degraded_room("shop").share, 0.5);
    EXPECT_EQ(b.degraded_room("shop").share, 0.5);
    // Half of the 40 free each, so the two together stay within the room's limit.
    EXPECT_EQ(total_a, 20);
    EXPECT_EQ(total_b, 20);
}

TEST(Degraded, AfterAMinuteAtTheRateLimitTheAllowanceComesBackAsThatMinuteAgesOut) {
    auto eng = make_engine(100'000, 600);  // only the rate binds: 10 new visitors a second
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(13);
    std::vector<std::int64_t> log;  // every admission's time: the sliding minute's ground truth
    tick(w, sync, t0);
    // A minute at the limit, the admissions spread over it.
    for (int s = 0; s < 60; ++s) {
        const std::int64_t now = t0 + s * 1000;
        if (s > 0) {
            tick(w, sync, now);
        }
        log_admissions(log, offer(*eng, w, sync, now + 100, 10, rng).size(), now + 100);
    }
    tick(w, sync, t0 + 60'000);
    ASSERT_EQ(node.snapshot()->find("shop")->counts().admitted_last_minute, 600);

    // The store goes away; three times as many visitors come as the rate allows.
    st.down = true;
    std::int64_t by_half_minute = 0;
    for (int s = 61; s < 240; ++s) {
        const std::int64_t now = t0 + s * 1000;
        tick(w, sync, now);
        const auto got = offer(*eng, w, sync, now + 100, 30, rng).size();
        log_admissions(log, got, now + 100);
        if (s <= 90) {
            by_half_minute += static_cast<std::int64_t>(got);
        }
    }
    ASSERT_TRUE(sync.degraded(t0 + 239'000));
    // Half a minute into the outage about half of the minute before it has aged out: the node
    // admits again (it used to start a whole minute behind and admit nobody for that minute).
    EXPECT_GE(by_half_minute, 200);
    // And no 60-second span ever admits more than the limit, through the outage and after.
    EXPECT_LE(busiest_minute(log), 600u);
    // Three minutes of outage at full demand: the sliding minute is used, not saved.
    EXPECT_GE(static_cast<std::int64_t>(log.size()), 600 + 170 * 10 * 9 / 10);
}

TEST(Degraded, AdmissionsAtTheStartOfTheMinuteHoldTheAllowanceBackUntilTheyAgeOut) {
    auto eng = make_engine(100'000, 600);
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(17);
    std::vector<std::int64_t> log;
    tick(w, sync, t0);
    // The whole minute's admissions at its start (a spike), then nobody new (and nobody queued:
    // a queue from before the outage would rightly hold the new visitors back).
    for (int s = 0; s < 2; ++s) {
        const std::int64_t now = t0 + s * 1000;
        if (s > 0) {
            tick(w, sync, now);
        }
        log_admissions(log, offer(*eng, w, sync, now + 100, 300, rng).size(), now + 100);
    }
    for (int s = 2; s <= 30; ++s) {
        tick(w, sync, t0 + s * 1000);
    }
    ASSERT_EQ(node.snapshot()->find("shop")->counts().admitted_last_minute, 600);

    st.down = true;
    std::int64_t before_they_age = 0, soon_after = 0;

    for (int s = 31; s < 100; ++s) {
        const std::int64_t now = t0 + s * 1000;
        tick(w, sync, now);
        const auto got = offer(*eng, w, sync, now + 100, 30, rng).size();
        log_admissions(log, got, now + 100);
        (s < 60 ? before_they_age : soon_after) += static_cast<std::int64_t>(got);
    }
    // Half a minute into the outage the minute is still full: assuming its admissions spread
    // over it would have admitted here, and overshot.
    EXPECT_EQ(before_they_age, 0);
    EXPECT_LE(busiest_minute(log), 600u);
    // Once they age out the node admits again at its rate, not a minute after the outage began.
    EXPECT_GE(soon_after, 300);
}

// Two nodes that both know both (each one's allowance is half of the room's limits).
struct two_nodes {
    explicit two_nodes(std::shared_ptr<room::engine> e) : eng(std::move(e)), st(inner) {
        a.set_engine(eng);
        b.set_engine(eng);
        tick(wa, a, t0);
        tick(wb, b, t0);
        tick(wa, a, t0 + 500);
        tick(wb, b, t0 + 600);
    }
    static sync_options named(const char* id) {
        sync_options o;
        o.node_id = id;
        return o;
    }
    std::shared_ptr<room::engine> eng;
    local_store inner;
    scripted_store st;
    room::node_state node_a, node_b;
    sync_task a{node_a, st, named("a")}, b{node_b, st, named("b")};
    room::worker_state wa{node_a}, wb{node_b};
};

// The first visitor of an idle node waits for a top-up (an idle node leases nothing); its one
// slot lands in the node's shared pool, and a visitor of another worker takes it first. The first
// visitor then asks once more, and is admitted: the room is empty. (Real daemons queued such a
// first visitor in an empty room; issue 16.) A third try there is not: the last one queues.
TEST(SyncTask, AVisitorWhoseTopUpWasTakenByAnotherWorkersVisitorAsksOnceMore) {
    test::one_node n(make_engine(20, 60, std::chrono::minutes{1}));
    auto& [eng, node, st, sync] = n;
    const room::compiled_room& r = eng->rooms()[0];
    room::worker_state w1(node), w2(node);
    room::rng rng(5);
    sync.run_once(t0);
    ASSERT_EQ(node.pool("shop").available(), 0) << "an idle node leases nothing";
    ASSERT_EQ(eng->decide(r, w1, nullptr, t0 + 100, rng).what, room::action::wait_for_slots);
    sync.top_up("shop", t0 + 100, [](bool) {});
    ASSERT_EQ(node.pool("shop").available(), 1);
    ASSERT_EQ(eng->decide(r, w2, nullptr, t0 + 101, rng).what, room::action::admit)
        << "the other worker's visitor takes the slot first";
    ASSERT_EQ(eng->decide(r, w1, nullptr, t0 + 102, rng, room::attempt::after_top_up).what,
              room::action::wait_for_slots)
        << "its slot gone, the first visitor asks once more";
    sync.top_up("shop", t0 + 102, [](bool) {});
    EXPECT_EQ(eng->decide(r, w1, nullptr, t0 + 103, rng, room::attempt::after_second_top_up).what,
              room::action::admit);
    // Taken again by someone else, the last try queues rather than ask a third time.
    while (node.pool("shop").available() > 0) {
        ASSERT_EQ(eng->decide(r, w2, nullptr, t0 + 104, rng).what, room::action::admit);
    }
    EXPECT_EQ(eng->decide(r, w1, nullptr, t0 + 105, rng, room::attempt::after_second_top_up).what,
              room::action::queue);
}

// A room of one place, sessions of 5 s (active windows of 1 s: visitor a, last seen at t0 + 100,
// holds the place in the store until t0 + 6000). a comes back at t0 + 5800 on one worker; b
// arrives at t0 + 6100 on another, before the next sync. The store let a's window go at 6000;
// a's renewal, handed over at once (its window ended within two intervals), tells the top-up
// that b's place is a's: b waits. (Without either step the top-up gave b a's place: two in a
// room of one.)
TEST(SyncTask, ARenewalTheStoreHasNotHadYetHoldsItsPlaceAgainstATopUp) {
    test::one_node n(make_engine(1, 100, std::chrono::seconds{5}));
    auto& [eng, node, st, sync] = n;
    room::worker_state w1(node), w2(node);
    room::rng rng(3);
    sync.run_once(t0);
    const auto admitted_a =
        test::decide_with_top_ups(*eng, eng->rooms()[0], w2, nullptr, t0 + 100, rng,
                                  [&] { sync.top_up("shop", t0 + 100, [](bool) {}); });
    ASSERT_EQ(admitted_a.what, room::action::admit);
    w2.flush();
    sync.run_once(t0 + 1000);
    sync.run_once(t0 + 5500);
    const auto again = eng->decide(eng->rooms()[0], w2, &admitted_a.cookie, t0 + 5800, rng);
    ASSERT_EQ(again.what, room::action::admit) << "a's session is alive";
    EXPECT_EQ(node.unreported_renewals("shop", eng->rooms()[0].limits_at(t0 + 6100), t0 + 6100), 1)
        << "a's renewal was handed over at once, and the store let its window go at 6000";
    ASSERT_EQ(eng->decide(eng->rooms()[0], w2, &admitted_a.cookie, t0 + 5900, rng).what,
              room::action::admit);
    EXPECT_EQ(node.unreported_renewals("shop", eng->rooms()[0].limits_at(t0 + 6100), t0 + 6100), 1)
        << "a copy of a's old cookie, replayed, is not handed over again";
    EXPECT_EQ(decide(*eng, w1, sync, t0 + 6100, rng).what, room::action::queue)
        << "a still holds the one place: b waits";
    sync.run_once(t0 + 6500);
    EXPECT_EQ(node.snapshot()->find("shop")->counts().active, 1) << "a, counted again";
}

TEST(SyncTask, NearTheLimitATopUpTakesOnlyWhatItsVisitorsNeed) {
    // A room of 10 with a demand of 5 an interval over two nodes is near its limit; one of 1000
    // is not.
    for (const auto& [active, got_first] : {std::pair{10, 1}, std::pair{1000, 5}}) {
        two_nodes n(make_engine(active, 1000));
        add_demand(n.node_a, 5);
        n.a.run_once(t0 + 1500);
        auto& pool = n.node_a.pool("shop");
        EXPECT_EQ(pool.available() == 0, active == 10) << "near the limit nobody leases";
        pool.take_up_to(pool.available());
        // Its top-ups ask for the last interval's demand and more: near the limit each gets one
        // slot, for the one visitor waiting; far from it the first gets what it asked for.
        std::vector<std::int64_t> got;
        for (int i = 0; i < 3; ++i) {
            n.a.top_up("shop", t0 + 1600 + i, [](bool) {});
            got.push_back(pool.available());
            pool.take_up_to(pool.available());
        }
        EXPECT_EQ(got.front(), got_first) << active;
        if (active == 10) {
            EXPECT_EQ(got, (std::vector<std::int64_t>{1, 1, 1}));
            EXPECT_EQ(n.inner.held_total("shop"), 3);  // used, not yet reported
        }
    }
}

// The argument of sync_task::refill, tested: with the rate binding and both nodes flooded
// through a three-minute outage, no 60-second span admits more than the limit over the two
// nodes together (before the outage included), and neither more than its half.
TEST(Degraded, TwoFloodedNodesTogetherStayWithinTheRateInAnyMinute) {
    two_nodes n(make_engine(100'000, 600));
    room::rng rng(29);
    std::vector<std::int64_t> all, only_a, only_b;
    log_admissions(all, offer(*n.eng, n.wa, n.a, t0 + 700, 250, rng).size(), t0 + 700);
    log_admissions(all, offer(*n.eng, n.wb, n.b, t0 + 800, 250, rng).size(), t0 + 800);
    tick(n.wa, n.a, t0 + 1500);
    tick(n.wb, n.b, t0 + 1600);
    ASSERT_EQ(all.size(), 500u);
    n.st.down = true;
    for (int s = 2; s < 180; ++s) {
        const std::int64_t now = t0 + s * 1000;
        tick(n.wa, n.a, now);
        tick(n.wb, n.b, now + 300);
        const auto ga = offer(*n.eng, n.wa, n.a, now + 10, 100, rng).size();
        const auto gb = offer(*n.eng, n.wb, n.b, now + 310, 100, rng).size();
        log_admissions(only_a, ga, now + 10);
        log_admissions(only_b, gb, now + 310);
        log_admissions(all, ga, now + 10);
        log_admissions(all, gb, now + 310);
    }
    EXPECT_LE(busiest_minute(all), 600u);
    EXPECT_LE(busiest_minute(only_a), 300u);
    EXPECT_LE(busiest_minute(only_b), 300u);
    EXPECT_GE(all.size(), 500u + 2 * 300) << "each node used its half of two minutes at least";
}

// A node back from an outage while another has not reported yet may be granted nothing (the
// store keeps the other's possible admissions free). Its own allowance admissions still in a
// worker must then count as held all the same, or the store would grant their places again.
TEST(Degraded, AllowanceAdmissionsStillInAWorkerCountAsHeldWhenTheStoreReturns) {
    two_nodes n(make_engine(100'000, 120));
    room::rng rng(21);
    // The minute nearly full before the outage (a's visitors).
    ASSERT_EQ(offer(*n.eng, n.wa, n.a, t0 + 700, 58, rng).size(), 58u);
    tick(n.wa, n.a, t0 + 1500);
    n.st.down = true;
    std::int64_t late = 0;
    for (int s = 3; s <= 8; ++s) {
        const std::int64_t now = t0 + s * 1000;
        n.a.run_once(now);  // the worker does not hand its deltas over: all still in it
        late += static_cast<std::int64_t>(offer(*n.eng, n.wa, n.a, now + 10, 5, rng).size());
    }
    ASSERT_GT(late, 0);
    ASSERT_TRUE(n.a.degraded(t0 + 8500));
    // The store returns; b (half of the rate: 60) has not reported yet, so nothing is free.
    n.st.down = false;
    n.a.run_once(t0 + 9000);
    ASSERT_FALSE(n.a.degraded(t0 + 9000));
    EXPECT_EQ(n.node_a.pool("shop").available(), 0);
    EXPECT_EQ(n.inner.held_total("shop"), late);
    // Their deltas arrive: admitted, no longer held.
    tick(n.wa, n.a, t0 + 10'000);
    const room::room_limits lim = n.eng->rooms()[0].limits_at(t0 + 10'000);
    EXPECT_EQ(n.inner.counts("shop", lim, t0 + 10'000).admitted_last_minute, 58 + late);
    EXPECT_EQ(n.inner.held_total("shop"), n.node_a.pool("shop").available());
}

// The store reserves for a node that has not reported since an outage the most its allowance
// can admit: half of the rate here, whatever the node did before. Node a made the whole minute
// before the outage; once that minute ages out its allowance is still its half, not the rate.
TEST(Degraded, AnAllowanceStaysWithinTheNodesShareOfTheRateWhateverItAdmittedBefore) {
    two_nodes n(make_engine(100'000, 60));
    room::rng rng(23);
    ASSERT_EQ(offer(*n.eng, n.wa, n.a, t0 + 700, 60, rng).size(), 60u);
    tick(n.wa, n.a, t0 + 1500);
    n.st.down = true;
    std::vector<std::int64_t> log;
    for (int s = 2; s < 200; ++s) {
        const std::int64_t now = t0 + s * 1000;
        tick(n.wa, n.a, now);
        log_admissions(log, offer(*n.eng, n.wa, n.a, now + 10, 10, rng).size(), now + 10);
    }
    ASSERT_TRUE(n.a.degraded(t0 + 199'000));
    EXPECT_LE(busiest_minute(log), 30u);
    EXPECT_GE(log.size(), 60u) << "the allowance is used: two minutes of it";
}

// Hostile: b's report leaving degraded mode is applied but its answer is lost (Redis answered
// after b gave up), twice. b stays degraded and admits its unused allowance (half the rate),
// while a, back first, is flooded and tops up: the store must keep b's allowance out of a's
// grants until b's report shows it got an answer, or the two admit 180 in a minute of 120.
TEST(Degraded, ANodeWhoseAnswerLeavingDegradedModeIsLostIsStillReservedFor) {
    auto eng = make_engine(100'000, 120);
    local_store inner;
    scripted_store sa(inner), sb(inner);
    room::node_state node_a, node_b;
    sync_task a(node_a, sa, two_nodes::named("a")), b(node_b, sb, two_nodes::named("b"));
    a.set_engine(eng);
    b.set_engine(eng);
    room::worker_state wa(node_a), wb(node_b);
    room::rng rng(31);
    for (std::int64_t at : {t0, t0 + 500}) {  // each knows both: its allowance is half
        tick(wa, a, at);
        tick(wb, b, at + 100);
    }
    sa.down = sb.down = true;
    for (int s = 1; s <= 6; ++s) {  // a quiet outage: both allowances fill their pools
        tick(wa, a, t0 + s * 1000);
        tick(wb, b, t0 + s * 1000 + 300);
    }
    ASSERT_TRUE(a.degraded(t0 + 6500));
    ASSERT_TRUE(b.degraded(t0 + 6500));
    sa.down = sb.down = false;
    std::vector<std::int64_t> all;
    for (int s = 7; s <= 70; ++s) {
        const std::int64_t now = t0 + s * 1000;
        tick(wa, a, now);
        // b's first two reports leaving degraded mode are applied, their answers lost.
        sb.lose_next = s <= 8;
        tick(wb, b, now + 300);
        for (std::int64_t k = 0; k < 4; ++k) {
            const std::int64_t at = now + 400 + 150 * k;
            log_admissions(all, offer(*eng, wa, a, at, 40, rng).size(), at);
            log_admissions(all, offer(*eng, wb, b, at + 10, 40, rng).size(), at + 10);
        }
        if (s == 8) {
            ASSERT_TRUE(b.degraded(now + 400)) << "its answers were lost";
        }
    }
    EXPECT_FALSE(b.degraded(t0 + 71'000));
    EXPECT_LE(busiest_minute(all), 120u);
    EXPECT_GE(all.size(), 120u) << "the room is used";
}

// The report leaving degraded mode is applied and its answer lost: the node resends it as it was,
// under its batch, until an answer comes, and its later admissions go in the report after. So
// its admissions of the outage count once (merged into a new report they counted twice, and
// the store held their places a whole session for nobody).
TEST(Degraded, AReportLeavingDegradedModeWhoseAnswerIsLostIsResentAndCountsOnce) {
    auto eng = make_engine(1000, 600);
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state ws(node);
    room::rng rng(37);
    tick(ws, sync, t0);
    st.down = true;
    std::size_t admitted = 0;
    for (int s = 1; s <= 5; ++s) {
        tick(ws, sync, t0 + s * 1000);
        admitted += offer(*eng, ws, sync, t0 + s * 1000 + 100, 4, rng).size();
    }
    ASSERT_TRUE(sync.degraded(t0 + 5500));
    ASSERT_GT(admitted, 0u);
    st.down = false;
    st.lose_next = true;
    tick(ws, sync, t0 + 6000);  // applied, answer lost
    ASSERT_TRUE(sync.degraded(t0 + 6000));
    admitted += offer(*eng, ws, sync, t0 + 6100, 3, rng).size();
    for (int s = 7; s <= 9; ++s) {
        tick(ws, sync, t0 + s * 1000);
        admitted += offer(*eng, ws, sync, t0 + s * 1000 + 100, 2, rng).size();
    }
    tick(ws, sync, t0 + 10'000);
    EXPECT_FALSE(sync.degraded(t0 + 10'000));
    const room::room_limits lim = eng->rooms()[0].limits_at(t0 + 10'000);
    const auto c = inner.counts("shop", lim, t0 + 10'000);
    EXPECT_EQ(c.admitted_last_minute, static_cast<std::int64_t>(admitted));
    EXPECT_EQ(c.active, static_cast<std::int64_t>(admitted));
}

// Hostile: b admits half of the room's free places from its allowance during an outage, then its
// process restarts (a deploy, a crash) before the store is back: the new process knows nothing
// of those admissions. The store charges what b's previous process may have admitted when b's
// first report names no epoch, or a is granted the same places (60 in a room of 40).
TEST(Degraded, ANodeRestartedDuringAnOutageIsChargedWhatItsLastProcessMayHaveAdmitted) {
    auto eng = make_engine(40, 600);
    local_store inner;
    scripted_store sa(inner), sb(inner);
    room::node_state node_a, node_b;
    sync_task a(node_a, sa, two_nodes::named("a")), b(node_b, sb, two_nodes::named("b"));
    a.set_engine(eng);
    b.set_engine(eng);
    room::worker_state wa(node_a), wb(node_b);
    room::rng rng(41);
    for (std::int64_t at : {t0, t0 + 500}) {
        tick(wa, a, at);
        tick(wb, b, at + 100);
    }
    sa.down = sb.down = true;
    std::size_t admitted = 0;
    for (int s = 1; s <= 4; ++s) {
        tick(wa, a, t0 + s * 1000);
        tick(wb, b, t0 + s * 1000 + 300);
    }
    admitted += offer(*eng, wb, b, t0 + 4400, 30, rng).size();
    ASSERT_EQ(admitted, 20u) << "half of the 40 free places";
    // b's process restarts; the new one starts while the store is still down.
    room::node_state node_b2;
    sync_task b2(node_b2, sb, two_nodes::named("b"));
    b2.set_engine(eng);
    room::worker_state wb2(node_b2);
    tick(wb2, b2, t0 + 5300);
    tick(wb2, b2, t0 + 6300);
    sa.down = sb.down = false;
    for (int s = 7; s <= 20; ++s) {
        const std::int64_t now = t0 + s * 1000;
        tick(wa, a, now);
        tick(wb2, b2, now + 300);
        for (std::int64_t k = 0; k < 3; ++k) {
            admitted += offer(*eng, wa, a, now + 400 + 150 * k, 20, rng).size();
            admitted += offer(*eng, wb2, b2, now + 410 + 150 * k, 20, rng).size();
        }
    }
    EXPECT_LE(admitted, 40u);
    EXPECT_GE(admitted, 30u) << "the room is used";
}

// An operator lowers the room from 1000 places to 100 during an outage (the origin struggles):
// the allowance follows at its next refill instead of spending the budget the old limit gave.
TEST(Degraded, AReloadThatLowersTheRoomDuringAnOutageLowersTheAllowance) {
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    sync.set_engine(make_engine(1000, 100'000));
    room::worker_state ws(node);
    room::rng rng(43);
    tick(ws, sync, t0);
    std::size_t admitted = offer(*make_engine(1000, 100'000), ws, sync, t0 + 100, 50, rng).size();
    tick(ws, sync, t0 + 1000);
    ASSERT_EQ(admitted, 50u);
    st.down = true;
    auto lowered = make_engine(100, 100'000);
    for (int s = 2; s <= 15; ++s) {
        if (s == 5) {
            sync.set_engine(lowered);  // the reload
        }
        tick(ws, sync, t0 + s * 1000);  // the first refills fill the pool by the old limit
        if (s >= 5) {
            admitted += offer(*lowered, ws, sync, t0 + s * 1000 + 100, 100, rng).size();
        }
    }
    ASSERT_TRUE(sync.degraded(t0 + 15'000));
    EXPECT_LE(admitted, 100u);
}

TEST(Degraded, NodeStartedWhileTheStoreIsDownAdmitsNobodyNewAndDoesNotCrash) {
    auto eng = make_engine(100, 600);
    room::node_state node;
    local_store inner;
    scripted_store st(inner);
    sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state w(node);
    room::rng rng(2);
    st.down = true;
    for (int i = 0; i < 5; ++i) {
        const std::int64_t now = t0 + i * 1000;
        tick(w, sync, now);
        EXPECT_TRUE(offer(*eng, w, sync, now + 10, 20, rng).empty());
    }
    EXPECT_TRUE(sync.degraded(t0 + 4000));
    EXPECT_FALSE(sync.degraded_room("shop").active);
    // The store returns: the first sync leases and the node admits again.
    st.down = false;
    tick(w, sync, t0 + 5000);
    EXPECT_EQ(sync.degraded_since_ms(), 0);
    EXPECT_EQ(offer(*eng, w, sync, t0 + 5010, 1, rng).size(), 1u);
}

}  // namespace
}  // namespace waitroom::state
