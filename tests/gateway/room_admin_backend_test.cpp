// The admin backend's PATCH against the state store: the store takes the change first
// and the node applies it at once; a store that cannot take it fails the PATCH and nothing
// changes; without a store the node's own switches change, as before.

#include <gtest/gtest.h>

#include <optional>

#include "support/room_config.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/gateway/room_admin_backend.hpp"
#include "waitroom/gateway/room_filter.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::gateway {
namespace {

// A store that is up for syncs but cannot take the switches (a Redis write that timed out).
class refusing_store final : public state::store {
  public:
    void sync(state::node_report report, sync_handler done) override {
        inner.sync(std::move(report), std::move(done));
    }
    void top_up(state::top_up_request req, top_up_handler done) override {
        inner.top_up(std::move(req), std::move(done));
    }
    void write_overrides(state::override_write, override_handler done) override {
        ++writes;
        done(state::override_result{make_error_code(state::errc::timeout), {}});
    }
    state::local_store inner;
    int writes = 0;
};

// The daemon's pieces around one admin backend, as server.cpp wires them.
struct daemon {
    explicit daemon(state::store* st, bool pass_store = true)
        : store(st), sync(node, *st, state::sync_options{}) {
        auto cfg = test::shop_config();
        cookie::key k;
        k.id = "k1";
        auto keys = std::make_shared<const cookie::key_ring>(std::vector<cookie::key>{k});
        node_runtime::inputs in;
        in.keys = keys;
        in.overrides = overrides;
        auto built = node_runtime::build(cfg, in);
        EXPECT_TRUE(built.runtime);
        sync.set_engine(built.runtime->engine);
        sync.set_overrides(overrides);
        filter =
            std::make_unique<room_filter>(std::make_shared<runtime_slot>(built.runtime), node, sync,
                                          clock, std::vector<boost::asio::any_io_executor>{});
        backend = std::make_unique<room_admin_backend>(*filter, node, sync, overrides, nullptr, 0,
                                                       clock, pass_store ? st : nullptr);
    }

    admin::admin_patch_outcome patch(std::optional<bool> queue_all, std::optional<bool> suspended) {
        admin::admin_room_patch p;
        p.queue_all = queue_all;
        p.suspended = suspended;
        std::optional<admin::admin_patch_outcome> out;
        backend->patch_room("shop", p, [&](admin::admin_patch_outcome o) { out = std::move(o); });
        EXPECT_TRUE(out.has_value());  // both stores here answer inline
        return out.value_or(admin::admin_patch_outcome{});
    }
    const room::room_switches& switches() { return overrides->entry("shop"); }

    state::store* store;
    util::manual_clock clock;
    room::node_state node;
    std::shared_ptr<room::room_overrides> overrides = std::make_shared<room::room_overrides>();
    state::sync_task sync;
    std::unique_ptr<room_filter> filter;
    std::unique_ptr<room_admin_backend> backend;
};

TEST(RoomAdminBackend, PatchGoesToTheStoreAndAppliesAtOnce) {
    state::local_store st;
    daemon d(&st);
    auto o = d.patch(true, std::nullopt);
    EXPECT_EQ(o.result, admin::admin_patch_result::applied);
    ASSERT_TRUE(o.status.has_value());
    EXPECT_TRUE(o.status->queue_all);
    EXPECT_EQ(o.status->status, admin::room_queue_status::queueing);
    EXPECT_EQ(d.switches().queue_all(), std::optional<bool>(true));
    EXPECT_EQ(d.switches().suspended(), std::nullopt);  // absent field: left as it was

    // The store has it: another node sharing it would get it at its next sync.
    std::optional<state::override_result> held;
    st.write_overrides(state::override_write{"shop"},
                       [&](state::override_result r) { held = std::move(r); });
    ASSERT_TRUE(held.has_value());
    EXPECT_EQ(held->overrides.queue_all, std::optional<bool>(true));

    // And this node's own next sync keeps it.
    std::optional<std::error_code> ec;
    d.sync.run_once(util::unix_ms(d.clock.now()), [&](std::error_code e) { ec = e; });
    ASSERT_EQ(ec, std::error_code{});
    EXPECT_EQ(d.switches().queue_all(), std::optional<bool>(true));
}

TEST(RoomAdminBackend, PatchTheStoreCannotTakeFailsAndChangesNothing) {
    refusing_store st;
    daemon d(&st);
    auto o = d.patch(true, true);
    EXPECT_EQ(st.writes, 1);
    EXPECT_EQ(o.result, admin::admin_patch_result::failed);  // admin_routes answers 503 with it
    EXPECT_NE(o.message.find("state store"), std::string::npos) << o.message;
    EXPECT_FALSE(o.status.has_value());
    EXPECT_EQ(d.switches().queue_all(), std::nullopt);
    EXPECT_EQ(d.switches().suspended(), std::nullopt);
    auto s = d.backend->room_status("shop");
    ASSERT_TRUE(s.has_value());
    EXPECT_FALSE(s->queue_all);
    EXPECT_FALSE(s->suspended);
}

TEST(RoomAdminBackend, WithoutAStoreAPatchSetsThisNodesSwitchesOnly) {
    refusing_store st;  // for the sync task only: the backend is given no store
    daemon d(&st, false);
    auto o = d.patch(std::nullopt, true);
    EXPECT_EQ(o.result, admin::admin_patch_result::applied);
    EXPECT_EQ(st.writes, 0);
    EXPECT_EQ(d.switches().suspended(), std::optional<bool>(true));
    o = d.patch(false, std::nullopt);
    EXPECT_EQ(d.switches().queue_all(), std::optional<bool>(false));
    EXPECT_EQ(d.switches().suspended(), std::optional<bool>(true));  // kept
    ASSERT_TRUE(o.status.has_value());
    EXPECT_EQ(o.status->status, admin::room_queue_status::suspended);
}

TEST(RoomAdminBackend, UnknownRoomIsNotWritten) {
    refusing_store st;
    daemon d(&st);
    std::optional<admin::admin_patch_outcome> out;
    d.backend->patch_room("nope", admin::admin_room_patch{true, std::nullopt},
                          [&](admin::admin_patch_outcome o) { out = std::move(o); });
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->result, admin::admin_patch_result::unknown_room);
    EXPECT_EQ(st.writes, 0);
}

}  // namespace
}  // namespace waitroom::gateway
