#pragma once
// The visitor's address behind trusted proxies: which X-Forwarded-For entry to believe, and the
// textual forms of addresses. Pure functions over strings, no I/O.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::gateway {

using ip_bytes = std::array<std::uint8_t, 16>;  // IPv6; IPv4 as v4-mapped (::ffff:a.b.c.d)

// True when `ip` lies in one of `networks`.
bool is_trusted(const std::vector<config::cidr>& networks, const ip_bytes& ip);

// One X-Forwarded-For entry: "192.0.2.1", "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]",
// "[2001:db8::1]:443", "::ffff:192.0.2.1". Anything else ("unknown", obfuscated ids, junk) is
// nullopt. Surrounding spaces are ignored. Does not allocate.
std::optional<ip_bytes> parse_forwarded_address(std::string_view entry);

// The visitor behind a trusted peer, from the values of the request's X-Forwarded-For fields in
// the order received: the rightmost address that is not trusted. When every address is trusted,
// the leftmost; when an entry is not an address, the last address walked before it (a trusted
// one: nothing left of junk can be vouched for). nullopt when no address could be taken (no
// field, or junk rightmost): the peer stays the client.
std::optional<ip_bytes> select_client(std::span<const std::string_view> forwarded_for,
                                      const std::vector<config::cidr>& trusted);

// "192.0.2.1" for a v4-mapped address, "2001:db8::1" otherwise (RFC 5952), into `out`.
void format_ip(const ip_bytes& ip, std::string& out);

}  // namespace waitroom::gateway
