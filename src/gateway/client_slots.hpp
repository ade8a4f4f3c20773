#pragma once
// How many origin connections (or waits for one) each client holds on one worker, for
// origin.max_connections_per_client. A client is an address: IPv4 whole, IPv6 by its /56 (what
// an ISP delegates to one subscriber, who can pick any address and any /64 in it). An
// open-addressing table with a seeded hash (a crafted set of addresses cannot make its probes
// long), which holds only the clients that hold something: its size follows the worker's forwards
// in flight, so it allocates only when it grows past the most it ever held. One per worker, no
// lock.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace waitroom::gateway {

class client_slots {
  public:
    using address = std::array<std::uint8_t, 16>;  // IPv6, IPv4 as v4-mapped (::ffff:a.b.c.d)

    client_slots();

    // The key `ip` counts under: the address itself, or an IPv6 address's /56.
    static address client_of(const address& ip);

    // Takes a slot for `client` (a client_of key) unless it holds `cap` already: false then.
    bool take(const address& client, std::size_t cap);
    // Gives back a slot that take() gave.
    void give(const address& client);

    std::size_t held(const address& client) const;  // slots `client` holds
    std::size_t clients() const { return used_; }   // clients holding at least one

  private:
    struct entry {
        address client{};
        std::uint32_t count = 0;  // 0: the entry is free
    };

    std::size_t home(const address& client) const;
    // The entry of `client`, or the free entry where it would go.
    std::size_t find(const address& client) const;
    void grow();

    std::vector<entry> table_;  // a power of two in size, at most half used
    std::size_t used_ = 0;
    std::uint64_t seed_;
};

}  // namespace waitroom::gateway
