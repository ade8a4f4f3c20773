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

void room_overrides::write(const std::string& room_id, std::optional<bool> queue_all,
                           std::optional<bool> suspended) {
    room_switches& sw = entry(room_id);
    std::lock_guard lock(mu_);
    sw.set_queue_all(queue_all);
    sw.set_suspended(suspended);
    ++writes_;
}

std::uint64_t room_overrides::writes() const {
    std::lock_guard lock(mu_);
    return writes_;
}

bool room_overrides::apply_synced(const std::string& room_id, std::optional<bool> queue_all,
                                  std::optional<bool> suspended, std::uint64_t writes_seen) {
    room_switches& sw = entry(room_id);
    // Under the lock: a local write cannot slip between the check and the stores.
    std::lock_guard lock(mu_);
    if (writes_ != writes_seen) {
        return false;
    }
    sw.set_queue_all(queue_all);
    sw.set_suspended(suspended);
    return true;
}

namespace {

const config::room* find_room(const config::config& c, const std::string& id) {
    for (const auto& r : c.rooms) {
        if (r.id == id) {
            return &r;
        }
    }
    return nullptr;
}

changed_keys compare(const config::config& before, const config::config& after,
                     const std::string& id) {
    const config::room* old_room = find_room(before, id);
    const config::room* new_room = find_room(after, id);
    bool either_missing = old_room == nullptr || new_room == nullptr;
    changed_keys c;
    c.room = id;
    c.queue_all = either_missing || old_room->queue_all != new_room->queue_all;
    c.suspended = either_missing || old_room->suspended != new_room->suspended;
    return c;
}

}  // namespace

std::vector<changed_keys> room_overrides::changes(const config::config& before,
                                                  const config::config& after) {
    std::vector<changed_keys> out;
    auto add = [&](const std::string& id) {
        for (const auto& c : out) {
            if (c.room == id) {
                return;
            }
        }
        auto c = compare(before, after, id);
        if (c.queue_all || c.suspended) {
            out.push_back(std::move(c));
        }
    };
    for (const auto& r : before.rooms) {
        add(r.id);
    }
    for (const auto& r : after.rooms) {
        add(r.id);
    }
    return out;
}

std::vector<std::string> room_overrides::reconcile(const config::config& before,
                                                   const config::config& after) {
    std::vector<std::string> dropped;
    std::lock_guard lock(mu_);
    // A reload is a local change: a sync answer already on its way must not restore a switch
    // dropped here (the store is cleared right after, see server.cpp).
    ++writes_;
    for (auto& [id, sw] : rooms_) {
        const changed_keys c = compare(before, after, id);
        const bool queue_all_changed = c.queue_all;
        const bool suspended_changed = c.suspended;
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
