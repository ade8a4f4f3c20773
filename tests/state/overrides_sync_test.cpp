// Run-time room switches across nodes: a write to the store reaches every node sharing
// it at that node's next sync, a clear does too, a restarted node gets them back, an answer older
// than a local change does not undo it, and a reload that changes a key clears it everywhere.

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "waitroom/config/config.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

#include "state/store_doubles.hpp"
#include "support/room_config.hpp"

namespace waitroom::state {
namespace {

using test::scripted_store;
using test::t0;

std::shared_ptr<config::config> one_room(bool queue_all = false, bool suspended = false) {
    auto cfg = test::shop_config();
    cfg->rooms[0].queue_all = queue_all;
    cfg->rooms[0].suspended = suspended;
    return cfg;
}

// One node: its state, its switches, an engine that reads them and its sync task.
struct node {
    node(store& st, const std::string& id, std::shared_ptr<config::config> cfg = one_room())
        : overrides(std::make_shared<room::room_overrides>()),
          eng(std::make_shared<room::engine>(cfg, room::windowing{}, overrides)),
          sync(state, st, options(id)) {
        sync.set_engine(eng);
        sync.set_overrides(overrides);
    }

    static sync_options options(const std::string& id) {
        sync_options o;
        o.node_id = id;
        return o;
    }

    std::error_code run(std::int64_t now) {
        std::optional<std::error_code> out;
        sync.run_once(now, [&](std::error_code ec) { out = ec; });
        EXPECT_TRUE(out.has_value());
        return out.value_or(errc::timeout);
    }

    room::settings settings(std::int64_t now = t0) const {
        const room::compiled_room& r = eng->rooms().at(0);
        return r.settings_at(r.phase_at(now));
    }
    const room::room_switches& switches() { return overrides->entry("shop"); }

    room::node_state state;
    std::shared_ptr<room::room_overrides> overrides;
    std::shared_ptr<room::engine> eng;
    sync_task sync;
};

override_result write(store& st, switch_write queue_all, switch_write suspended) {
    override_write w;
    w.room = "shop";
    w.queue_all = queue_all;
    w.suspended = suspended;
    std::optional<override_result> out;
    st.write_overrides(std::move(w), [&](override_result r) { out = std::move(r); });
    EXPECT_TRUE(out.has_value());
    return out.value_or(override_result{make_error_code(errc::timeout), {}});
}

// What room_admin_backend::patch_room does on node `n`: the store first, then the node at once.
void patch(store& st, node& n, switch_write queue_all, switch_write suspended) {
    auto res = write(st, queue_all, suspended);
    ASSERT_FALSE(res.ec);
    n.overrides->write("shop", res.overrides.queue_all, res.overrides.suspended);
}

TEST(LocalStoreOverrides, SyncAnswerCarriesTheSwitchesTheLastWriteLeft) {
    local_store st;
    auto res = write(st, switch_write::on, switch_write::keep);
    ASSERT_FALSE(res.ec);
    EXPECT_EQ(res.overrides.queue_all, std::optional<bool>(true));
    EXPECT_EQ(res.overrides.suspended, std::nullopt);

    res = write(st, switch_write::keep, switch_write::off);
    EXPECT_EQ(res.overrides.queue_all, std::optional<bool>(true));  // kept
    EXPECT_EQ(res.overrides.suspended, std::optional<bool>(false));

    node_report r;
    r.node_id = "a";
    r.now_ms = t0;
    room_report rr;
    rr.room = "shop";
    rr.limits.total_active_users = 10;
    rr.limits.new_users_per_minute = 10;
    r.rooms.push_back(rr);
    std::optional<sync_result> out;
    st.sync(r, [&](sync_result s) { out = std::move(s); });
    ASSERT_TRUE(out.has_value());
    ASSERT_EQ(out->rooms.size(), 1u);
    EXPECT_EQ(out->rooms[0].overrides.queue_all, std::optional<bool>(true));
    EXPECT_EQ(out->rooms[0].overrides.suspended, std::optional<bool>(false));

    res = write(st, switch_write::unset, switch_write::keep);
    EXPECT_EQ(res.overrides.queue_all, std::nullopt);
    EXPECT_EQ(res.overrides.suspended, std::optional<bool>(false));
}

TEST(OverridesSync, PatchOnOneNodeReachesAnotherAtItsNextSync) {
    local_store st;
    node a(st, "a");
    node b(st, "b");
    ASSERT_FALSE(a.run(t0));
    ASSERT_FALSE(b.run(t0));
    EXPECT_FALSE(b.settings().queue_all);

    patch(st, a, switch_write::on, switch_write::keep);
    EXPECT_TRUE(a.settings().queue_all);   // at once on the node that took the PATCH
    EXPECT_FALSE(b.settings().queue_all);  // the other one learns it from the store

    ASSERT_FALSE(b.run(t0 + 1'000));
    EXPECT_TRUE(b.settings().queue_all);
    EXPECT_EQ(b.switches().queue_all(), std::optional<bool>(true));
    EXPECT_EQ(b.switches().suspended(), std::nullopt);
    EXPECT_EQ(b.eng->status(b.eng->rooms()[0], room::room_state{}, t0).status,
              room::room_status_kind::queueing);

    // Node A's own sync agrees with what it already applied.
    ASSERT_FALSE(a.run(t0 + 1'000));
    EXPECT_TRUE(a.settings().queue_all);
}

TEST(OverridesSync, ClearingASwitchGivesTheRoomBackToTheFileOnEveryNode) {
    local_store st;
    node a(st, "a", one_room(false, true));  // the file suspends the room
    node b(st, "b", one_room(false, true));
    patch(st, a, switch_write::on, switch_write::off);
    ASSERT_FALSE(b.run(t0));
    EXPECT_TRUE(b.settings().queue_all);
    EXPECT_FALSE(b.settings().suspended);

    patch(st, a, switch_write::unset, switch_write::unset);
    EXPECT_FALSE(a.settings().queue_all);
    EXPECT_TRUE(a.settings().suspended);
    ASSERT_FALSE(b.run(t0 + 1'000));
    EXPECT_EQ(b.switches().queue_all(), std::nullopt);
    EXPECT_EQ(b.switches().suspended(), std::nullopt);
    EXPECT_FALSE(b.settings().queue_all);
    EXPECT_TRUE(b.settings().suspended);
}

TEST(OverridesSync, RestartedNodeGetsTheSwitchesBackAtItsFirstSync) {
    local_store st;
    {
        node a(st, "a");
        patch(st, a, switch_write::keep, switch_write::on);
        ASSERT_FALSE(a.run(t0));
    }
    node again(st, "a");
    EXPECT_FALSE(again.settings().suspended);
    ASSERT_FALSE(again.run(t0 + 1'000));
    EXPECT_TRUE(again.settings().suspended);
}

TEST(OverridesSync, FailedSyncLeavesTheSwitchesAlone) {
    struct unreachable final : store {
        void sync(node_report, sync_handler done) override {
            done(sync_result{make_error_code(errc::unavailable), {}});
        }
        void top_up(top_up_request, top_up_handler done) override { done({}); }
    } st;
    node a(st, "a");
    a.overrides->write("shop", true, std::nullopt);
    EXPECT_EQ(a.run(t0), make_error_code(errc::unavailable));
    EXPECT_EQ(a.switches().queue_all(), std::optional<bool>(true));
}

TEST(OverridesSync, AnswerThatLeftBeforeALocalPatchDoesNotUndoIt) {
    scripted_store st;
    st.hold_answers = true;
    node a(st, "a");
    a.sync.run_once(t0);  // the store has answered "no switches"; the answer is on its way
    ASSERT_EQ(st.pending.size(), 1u);

    patch(st, a, switch_write::on, switch_write::keep);
    st.release_all();  // the older answer arrives after the PATCH
    EXPECT_TRUE(a.settings().queue_all);

    a.sync.run_once(t0 + 1'000);
    st.release_all();
    EXPECT_TRUE(a.settings().queue_all);
    EXPECT_EQ(a.switches().queue_all(), std::optional<bool>(true));
}

TEST(OverridesSync, ReloadThatChangesAKeyClearsItOnEveryNode) {
    local_store st;
    node a(st, "a");
    node b(st, "b");
    patch(st, a, switch_write::on, switch_write::on);
    ASSERT_FALSE(b.run(t0));
    ASSERT_TRUE(b.settings().queue_all);
    ASSERT_TRUE(b.settings().suspended);

    // Node A reloads a file that changed `queue_all` only: what server.cpp's reload does.
    auto before = one_room(false, false);
    auto after = one_room(true, false);
    auto dropped = a.overrides->reconcile(*before, *after);
    EXPECT_EQ(dropped, (std::vector<std::string>{"shop.queue_all"}));
    auto changes = room::room_overrides::changes(*before, *after);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].room, "shop");
    EXPECT_TRUE(changes[0].queue_all);
    EXPECT_FALSE(changes[0].suspended);
    auto res = write(st, switch_write::unset, switch_write::keep);
    ASSERT_FALSE(res.ec);

    ASSERT_FALSE(a.run(t0 + 1'000));
    EXPECT_EQ(a.switches().queue_all(), std::nullopt);               // not brought back
    EXPECT_EQ(a.switches().suspended(), std::optional<bool>(true));  // untouched key kept
    ASSERT_FALSE(b.run(t0 + 1'000));
    EXPECT_EQ(b.switches().queue_all(), std::nullopt);
    EXPECT_EQ(b.switches().suspended(), std::optional<bool>(true));
}

TEST(OverridesSync, ChangesNameEveryRoomThatLeftOrJoinedTheFile) {
    auto before = one_room();
    auto after = std::make_shared<config::config>();
    config::room other = before->rooms[0];
    other.id = "sale";
    after->rooms.push_back(other);
    auto changes = room::room_overrides::changes(*before, *after);
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[0].room, "shop");
    EXPECT_EQ(changes[1].room, "sale");
    EXPECT_TRUE(changes[0].queue_all && changes[0].suspended);
    EXPECT_TRUE(changes[1].queue_all && changes[1].suspended);
    EXPECT_TRUE(room::room_overrides::changes(*before, *one_room()).empty());
}

TEST(OverridesSync, StoreWithoutSwitchesRefusesTheWrite) {
    struct plain final : store {
        void sync(node_report, sync_handler done) override { done({}); }
        void top_up(top_up_request, top_up_handler done) override { done({}); }
    } st;
    EXPECT_EQ(write(st, switch_write::on, switch_write::keep).ec,
              make_error_code(errc::unavailable));
}

}  // namespace
}  // namespace waitroom::state
