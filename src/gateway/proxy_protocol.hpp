#pragma once
// The PROXY protocol header (HAProxy's spec, versions 1 and 2) that a load balancer sends
// before the first byte of a connection, giving the client's address. Sans-io: fed the bytes
// received so far, it says whether it needs more, failed, or is done and how many bytes the
// header took. Bounded: v1 headers are at most 107 bytes, v2 headers at most max_v2_size.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace waitroom::gateway::proxy_protocol {

inline constexpr std::size_t max_v1_size = 107;
// 16-byte fixed part plus addresses and TLVs; load balancers send a few hundred bytes at most.
inline constexpr std::size_t max_v2_size = 2048;

enum class status {
    need_more,  // the bytes so far are a valid beginning: read more (within the same bounds)
    done,       // header complete: `result.size` bytes belong to it
    invalid,    // not a PROXY header, malformed or oversized: close the connection
};

struct result {
    status what = status::need_more;
    std::size_t size = 0;  // done: bytes of the header
    // done: the source address carried, when the header carries one (v1 TCP4/TCP6, v2 PROXY
    // with INET/INET6). Absent for v1 UNKNOWN, v2 LOCAL, v2 UNSPEC or UNIX: keep the socket peer.
    bool has_source = false;
    std::array<std::uint8_t, 16> source{};  // IPv6; IPv4 v4-mapped
    std::uint16_t source_port = 0;
};

// Parses the beginning of a connection. Call again with more bytes while it answers need_more.
result parse(std::string_view bytes);

}  // namespace waitroom::gateway::proxy_protocol
