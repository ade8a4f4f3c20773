#pragma once
// The config most room, state and gateway tests start from: one room "shop" ("Shop") with the
// given limits, everything else at its default.

#include <cstdint>
#include <memory>

#include "waitroom/config/config.hpp"

namespace waitroom::test {

inline std::shared_ptr<config::config> shop_config(std::uint32_t total_active_users = 10,
                                                   std::uint32_t new_users_per_minute = 10) {
    auto cfg = std::make_shared<config::config>();
    config::room r;
    r.id = "shop";
    r.name = "Shop";
    r.total_active_users = total_active_users;
    r.new_users_per_minute = new_users_per_minute;
    cfg->rooms.push_back(r);
    return cfg;
}

}  // namespace waitroom::test
