#pragma once
// Choosing a request's server among the origin's: smooth weighted round robin (nginx's: a heavy
// server's turns are spread between the others'), or least_request, the less loaded of two
// servers drawn at random, weighed by weight (Envoy's power of two choices). Pure: the caller gives
// each server's weight, requests in flight and health, and the random source.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>

#include "waitroom/config/config.hpp"

namespace waitroom::gateway {

// One server as the balancer sees it.
struct balance_entry {
    unsigned weight = 1;
    std::size_t in_flight = 0;  // this worker's requests on it now
    bool available = true;      // not ejected, passing its health checks
    std::int64_t current = 0;   // round robin's running score (the balancer's own)
};

inline constexpr std::size_t no_server = static_cast<std::size_t>(-1);

// The index of the server for the next request, never `avoid` (a server this request just
// failed on; no_server for none): among the available ones, or when none is, among all of them
// (a server thought down is tried rather than none). no_server when `avoid` is the only one.
std::size_t pick_server(config::balance_policy policy, std::span<balance_entry> servers,
                        std::size_t avoid, std::mt19937_64& random);

}  // namespace waitroom::gateway
