#pragma once
// Run-time room switches (admin `PATCH /rooms/{id}`): queue_all and suspended as an operator set
// them. Owned by the node, not by a config snapshot, so they survive reloads; the engine reads
// them on every decision, so a change applies at once on every worker.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::room {

// One room's switches. Each is unset (the config decides), off or on. Lock-free: one relaxed load
// per switch on the decision path.
class room_switches {
  public:
    std::optional<bool> queue_all() const { return decode(queue_all_); }
    std::optional<bool> suspended() const { return decode(suspended_); }
    void set_queue_all(std::optional<bool> v) { queue_all_.store(encode(v), order); }
    void set_suspended(std::optional<bool> v) { suspended_.store(encode(v), order); }

  private:
    static constexpr auto order = std::memory_order_relaxed;
    static std::int8_t encode(std::optional<bool> v) { return v ? (*v ? 1 : 0) : -1; }
    static std::optional<bool> decode(const std::atomic<std::int8_t>& a) {
        std::int8_t v = a.load(order);
        if (v < 0) {
            return std::nullopt;
        }
        return v != 0;
    }

    std::atomic<std::int8_t> queue_all_{-1};
    std::atomic<std::int8_t> suspended_{-1};
};

// Every room's switches, by room id. Entries are created on first use (engine build, PATCH) and
// never move, so an engine keeps plain pointers to them.
class room_overrides {
  public:
    room_switches& entry(const std::string& room_id);
    // Null when the room never had an entry.
    const room_switches* find(const std::string& room_id) const;

    // On reload: drops each override whose key the file changed (the room's `queue_all` or
    // `suspended` differs between `before` and `after`), and both of a room that left the file.
    // Returns "room.key" for each override dropped, for the log.
    std::vector<std::string> reconcile(const config::config& before, const config::config& after);

  private:
    mutable std::mutex mu_;  // creation and lookup only; the switches themselves are atomic
    std::map<std::string, std::unique_ptr<room_switches>, std::less<>> rooms_;
};

}  // namespace waitroom::room
