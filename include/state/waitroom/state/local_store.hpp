#pragma once
// The embedded state store (`state.backend: local`, the default): the room ledgers in process
// memory behind a mutex. Calls complete inline, so a top-up costs microseconds.

#include <map>
#include <mutex>
#include <string>

#include "waitroom/state/room_ledger.hpp"
#include "waitroom/state/store.hpp"

namespace waitroom::state {

class local_store final : public store {
  public:
    void sync(node_report report, sync_handler done) override;
    void top_up(top_up_request req, top_up_handler done) override;
    void write_overrides(override_write w, override_handler done) override;

    // For tests and the simulator: the ledger of a room (created empty when absent).
    std::int64_t held_total(const std::string& room) const;
    room::room_counts counts(const std::string& room, const room::room_limits& limits,
                             std::int64_t now_ms) const;

  private:
    mutable std::mutex mu_;
    std::map<std::string, room_ledger> rooms_;
};

}  // namespace waitroom::state
