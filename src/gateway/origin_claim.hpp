#pragma once
// What one client's exchange holds of its worker's shared origin limits: a slot among the
// client's origin.max_connections_per_client, and for a WebSocket upgrade a place among
// origin.max_tunnels. Taken before an origin connection is sought; both are given back together
// when the connection goes back to the pool, or when the tunnel it became ends.

#include <optional>
#include <utility>

#include "client_ip.hpp"
#include "client_slots.hpp"
#include "waitroom/config/config.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

class origin_claim {
  public:
    explicit origin_claim(worker_context& worker) : worker_(worker) {}
    origin_claim(const origin_claim&) = delete;
    origin_claim& operator=(const origin_claim&) = delete;

    // The slot of `client` (the address the request is served for): false when it holds all it
    // may. No cap, or no address: nothing to hold.
    bool take_slot(const config::origin& o, const std::optional<ip_bytes>& client) {
        const std::size_t cap = config::per_client_cap(o);
        if (slot_held_ || cap == 0 || !client) {
            return true;
        }
        slot_client_ = client_slots::client_of(*client);
        slot_held_ = worker_.slots.take(slot_client_, cap);
        return slot_held_;
    }

    // A tunnel's place: false when all are taken. A tunnel holds its origin connection for as
    // long as it lasts, so a few clients' tunnels must not take the pool.
    bool take_tunnel(const config::origin& o) {
        if (tunnel_held_) {
            return true;
        }
        const std::size_t cap = config::tunnel_cap(o);
        if (cap != 0 && worker_.tunnels >= cap) {
            return false;
        }
        ++worker_.tunnels;
        tunnel_held_ = true;
        return true;
    }

    // Gives back the slot and the tunnel's place, whichever are held.
    void give_back() {
        if (std::exchange(slot_held_, false)) {
            worker_.slots.give(slot_client_);
        }
        if (std::exchange(tunnel_held_, false)) {
            --worker_.tunnels;
        }
    }

  private:
    worker_context& worker_;
    bool slot_held_ = false;    // slot_client_ holds a slot in worker_.slots
    bool tunnel_held_ = false;  // counts in worker_.tunnels
    client_slots::address slot_client_{};
};

}  // namespace waitroom::gateway
