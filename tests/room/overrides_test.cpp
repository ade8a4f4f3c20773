// Run-time room switches (admin PATCH): they win over the file and events, every engine built
// with the node's table sees them, and a reload drops only the ones whose key the file changed.

#include <gtest/gtest.h>

#include <memory>

#include "support/room_config.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/room/overrides.hpp"

namespace waitroom::room {
namespace {

std::shared_ptr<config::config> one_room(bool queue_all, bool suspended) {
    auto cfg = test::shop_config();
    cfg->rooms[0].queue_all = queue_all;
    cfg->rooms[0].suspended = suspended;
    return cfg;
}

settings settings_of(const engine& e) {
    const compiled_room& r = e.rooms().at(0);
    return r.settings_at(r.phase_at(0));
}

TEST(RoomOverrides, SwitchesAreUnsetUntilAnOperatorSetsThem) {
    room_overrides table;
    auto& sw = table.entry("shop");
    EXPECT_FALSE(sw.queue_all().has_value());
    EXPECT_FALSE(sw.suspended().has_value());
    sw.set_queue_all(true);
    sw.set_suspended(false);
    EXPECT_EQ(table.find("shop")->queue_all(), std::optional<bool>(true));
    EXPECT_EQ(table.find("shop")->suspended(), std::optional<bool>(false));
    EXPECT_EQ(table.find("other"), nullptr);
}

TEST(RoomOverrides, EngineSettingsFollowASwitchSetAfterTheEngineWasBuilt) {
    auto table = std::make_shared<room_overrides>();
    engine e(one_room(false, true), windowing{}, table);
    EXPECT_FALSE(settings_of(e).queue_all);
    EXPECT_TRUE(settings_of(e).suspended);

    table->entry("shop").set_queue_all(true);
    table->entry("shop").set_suspended(false);
    EXPECT_TRUE(settings_of(e).queue_all);
    EXPECT_FALSE(settings_of(e).suspended);
    EXPECT_EQ(e.status(e.rooms()[0], room_state{}, 0).status, room_status_kind::queueing);
}

TEST(RoomOverrides, EngineWithoutATableUsesTheFile) {
    engine e(one_room(true, false));
    EXPECT_TRUE(settings_of(e).queue_all);
    EXPECT_FALSE(settings_of(e).suspended);
}

TEST(RoomOverrides, ReloadOfAnUnchangedFileKeepsTheSwitches) {
    auto table = std::make_shared<room_overrides>();
    auto before = one_room(false, false);
    table->entry("shop").set_queue_all(true);
    table->entry("shop").set_suspended(true);
    auto after = one_room(false, false);
    after->rooms[0].total_active_users = 99;  // other keys may change freely
    EXPECT_TRUE(table->reconcile(*before, *after).empty());
    engine e(after, windowing{}, table);
    EXPECT_TRUE(settings_of(e).queue_all);
    EXPECT_TRUE(settings_of(e).suspended);
}

TEST(RoomOverrides, ReloadDropsOnlyTheSwitchWhoseKeyTheFileChanged) {
    auto table = std::make_shared<room_overrides>();
    table->entry("shop").set_queue_all(false);
    table->entry("shop").set_suspended(true);
    auto dropped = table->reconcile(*one_room(false, false), *one_room(true, false));
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0], "shop.queue_all");
    engine e(one_room(true, false), windowing{}, table);
    EXPECT_TRUE(settings_of(e).queue_all);  // the file's new value
    EXPECT_TRUE(settings_of(e).suspended);  // still the operator's
}

TEST(RoomOverrides, ReloadDropsTheSwitchesOfARoomThatLeftTheFile) {
    auto table = std::make_shared<room_overrides>();
    table->entry("shop").set_suspended(true);
    auto empty = std::make_shared<config::config>();
    auto dropped = table->reconcile(*one_room(false, false), *empty);
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0], "shop.suspended");
    EXPECT_FALSE(table->find("shop")->suspended().has_value());
}

}  // namespace
}  // namespace waitroom::room
