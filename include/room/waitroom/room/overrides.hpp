#pragma once
// Run-time room switches (admin `PATCH /rooms/{id}`): queue_all and suspended as an operator set
// them. Owned by the node, not by a config snapshot, so they survive reloads; the engine reads
// them on every decision, so a change applies at once on every worker. With a state store the
// store holds the switches and every sync brings them here, so every node converges.

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

// The keys of one room a new config file changed (a room that left or joined the file: both).
struct changed_keys {
    std::string room;
    bool queue_all = false;
    bool suspended = false;
};

// Every room's switches, by room id. Entries are created on first use (engine build, PATCH) and
// never move, so an engine keeps plain pointers to them.
class room_overrides {
  public:
    room_switches& entry(const std::string& room_id);
    // Null when the room never had an entry.
    const room_switches* find(const std::string& room_id) const;

    // A change this node made (admin PATCH once the store took it): applied at once, and counted
    // so that a sync answer that may predate it does not undo it (see apply_synced).
    void write(const std::string& room_id, std::optional<bool> queue_all,
               std::optional<bool> suspended);
    // Local changes so far (write, reconcile). Read when a sync leaves.
    std::uint64_t writes() const;
    // Sets the switches a sync answer carried, unless a local change happened since the sync
    // left (`writes_seen`): that answer may be older than the change, and the next sync brings
    // the store's newer state. Returns whether it applied them.
    bool apply_synced(const std::string& room_id, std::optional<bool> queue_all,
                      std::optional<bool> suspended, std::uint64_t writes_seen);

    // On reload: drops each override whose key the file changed (the room's `queue_all` or
    // `suspended` differs between `before` and `after`), and both of a room that left the file.
    // Returns "room.key" for each override dropped, for the log.
    std::vector<std::string> reconcile(const config::config& before, const config::config& after);
    // The keys that reconcile treats as changed, for every room of either file; a node with a
    // state store clears them there too, or the next sync would bring them back.
    static std::vector<changed_keys> changes(const config::config& before,
                                             const config::config& after);

  private:
    mutable std::mutex mu_;  // creation, lookup and local/synced writes; the switches are atomic
    std::map<std::string, std::unique_ptr<room_switches>, std::less<>> rooms_;
    std::uint64_t writes_ = 0;
};

}  // namespace waitroom::room
