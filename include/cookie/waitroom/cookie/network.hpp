#pragma once
// cookie.bind: prefix — the network a cookie is bound to. A cookie carries a 32-bit keyed hash of
// its visitor's network, never the address: the /24 of an IPv4 address or the /56 of an IPv6
// one, so that a visitor whose address moves inside their provider's block keeps the cookie,
// and a copy used from another network opens as someone else's.
//
//   tag = first 4 bytes (little endian) of SHA-256(network_secret(key) | family | prefix),
//         family 4 with the 3 bytes of the /24, 6 with the 7 bytes of the /56, 0 with none
//         (no address known); a tag of 0 is written as 1 (0 means "not bound").
//
// The hash is keyed by the cookie key that seals the cookie, so keys rotate as before: a cookie
// is checked against the tag of the key it was sealed with, and sealed again with the first.

#include <array>
#include <cstdint>
#include <optional>

#include "waitroom/cookie/key_ring.hpp"

namespace waitroom::cookie {

// An address as the gateway parses it: 16 bytes, IPv4 as v4-mapped IPv6; none when unknown.
using client_address = std::optional<std::array<std::uint8_t, 16>>;

// The tag of `address`'s network under key `key_index` of `ring`. Never 0; never throws.
std::uint32_t network_tag(const key_ring& ring, std::size_t key_index,
                          const client_address& address) noexcept;

}  // namespace waitroom::cookie
