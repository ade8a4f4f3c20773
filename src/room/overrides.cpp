#include "waitroom/room/overrides.hpp"

namespace waitroom::room {

room_switches& room_overrides::entry(const std::string& room_id) {
    std::lock_guard lock(mu_);
    auto& slot = rooms_[room_id];
    if (!slot) {
        slot = std::make_unique<room_switches>();
    }
    return *slot;
}

const room_switches* room_overrides::find(const std::string& room_id) const {
    std::lock_guard lock(mu_);
    auto it = rooms_.find(room_id);
    return it == rooms_.end() ? nullptr : it->second.get();
}

std::vector<std::string> room_overrides::reconcile(const config::config& before,
                                                   const config::config& after) {
    auto find_room = [](const config::config& c, const std::string& id) -> const config::room* {
        for (const auto& r : c.rooms) {
            if (r.id == id) {
                return &r;
            }
        }
        return nullptr;
    };
    std::vector<std::string> dropped;
    std::lock_guard lock(mu_);
    for (auto& [id, sw] : rooms_) {
        const config::room* old_room = find_room(before, id);
        const config::room* new_room = find_room(after, id);
        bool gone = new_room == nullptr;
        bool queue_all_changed =
            gone || old_room == nullptr || old_room->queue_all != new_room->queue_all;
        bool suspended_changed =
            gone || old_room == nullptr || old_room->suspended != new_room->suspended;
        if (queue_all_changed && sw->queue_all()) {
            sw->set_queue_all(std::nullopt);
            dropped.push_back(id + ".queue_all");
        }
        if (suspended_changed && sw->suspended()) {
            sw->set_suspended(std::nullopt);
            dropped.push_back(id + ".suspended");
        }
    }
    return dropped;
}

}  // namespace waitroom::room
