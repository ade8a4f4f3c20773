#include "proxy_protocol.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "waitroom/room/router.hpp"

namespace waitroom::gateway::proxy_protocol {

namespace {

constexpr std::string_view v1_prefix = "PROXY ";
constexpr std::string_view v2_signature{"\r\n\r\n\0\r\nQUIT\n", 12};

result invalid() {
    return {status::invalid};
}

// A prefix of `whole` (or `whole` itself followed by more): still possibly that header.
bool starts_like(std::string_view bytes, std::string_view whole) {
    const auto n = std::min(bytes.size(), whole.size());
    return bytes.substr(0, n) == whole.substr(0, n);
}

std::optional<std::uint16_t> v1_port(std::string_view s) {
    // Decimal, no sign, no leading zero (the spec's form), at most 65535.
    if (s.empty() || s.size() > 5 || (s.size() > 1 && s.front() == '0')) {
        return std::nullopt;
    }
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v > 65535) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(v);
}

// The address of a TCP4 (no ':') or TCP6 (with ':') line.
bool v1_address(std::string_view s, bool v6, std::array<std::uint8_t, 16>& out) {
    if ((s.find(':') != std::string_view::npos) != v6) {
        return false;
    }
    auto ip = room::parse_ip(s);
    if (ip) {
        out = *ip;
    }
    return ip.has_value();
}

// "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n", "PROXY UNKNOWN[ anything]\r\n".
result parse_v1(std::string_view bytes) {
    auto end = bytes.substr(0, max_v1_size).find("\r\n");
    if (end == std::string_view::npos) {
        // A lone CR or LF anywhere before the end is already malformed.
        auto seen = bytes.substr(0, max_v1_size);
        if (seen.find('\n') != std::string_view::npos ||
            seen.substr(0, seen.empty() ? 0 : seen.size() - 1).find('\r') !=
                std::string_view::npos) {
            return invalid();
        }
        return bytes.size() >= max_v1_size ? invalid() : result{status::need_more};
    }
    std::string_view line = bytes.substr(v1_prefix.size(), end - v1_prefix.size());
    // A lone CR or LF before the CRLF was refused above when it arrived first; refused here too,
    // so the verdict does not depend on how the bytes were cut into reads.
    if (line.find_first_of("\r\n") != std::string_view::npos) {
        return invalid();
    }
    result r{status::done, end + 2};
    if (line == "UNKNOWN" || line.starts_with("UNKNOWN ")) {
        return r;
    }
    std::string_view parts[5];
    std::size_t n = 0;
    while (n < 5) {
        auto sp = line.find(' ');
        parts[n++] = line.substr(0, sp);
        if (sp == std::string_view::npos) {
            line = {};
            break;
        }
        line.remove_prefix(sp + 1);
        if (n == 5) {
            return invalid();  // a sixth field
        }
    }
    if (n != 5 || !line.empty()) {
        return invalid();
    }
    const bool v6 = parts[0] == "TCP6";
    if (!v6 && parts[0] != "TCP4") {
        return invalid();
    }
    std::array<std::uint8_t, 16> dst{};
    auto sport = v1_port(parts[3]);
    if (!v1_address(parts[1], v6, r.source) || !v1_address(parts[2], v6, dst) || !sport ||
        !v1_port(parts[4])) {
        return invalid();
    }
    r.has_source = true;
    r.source_port = *sport;
    return r;
}

result parse_v2(std::string_view bytes) {
    if (bytes.size() < 16) {
        return {status::need_more};
    }
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    const unsigned version = b[12] >> 4;
    const unsigned command = b[12] & 0x0f;
    const unsigned family = b[13] >> 4;
    const unsigned transport = b[13] & 0x0f;
    const std::size_t length = (std::size_t{b[14]} << 8) | b[15];
    if (version != 2 || command > 1 || family > 3 || transport > 2) {
        return invalid();
    }
    const std::size_t size = 16 + length;
    if (size > max_v2_size) {
        return invalid();
    }
    if (bytes.size() < size) {
        return {status::need_more};
    }
    result r{status::done, size};
    if (command == 0) {
        return r;  // LOCAL: the balancer's own connection (health checks); keep the peer
    }
    const unsigned char* addr = b + 16;
    if (family == 1) {  // INET: src, dst (4 each), src port, dst port
        if (length < 12) {
            return invalid();
        }
        if (transport == 1) {
            r.has_source = true;
            r.source[10] = 0xff;
            r.source[11] = 0xff;
            std::memcpy(r.source.data() + 12, addr, 4);
            r.source_port = static_cast<std::uint16_t>((addr[8] << 8) | addr[9]);
        }
    } else if (family == 2) {  // INET6: 16 each, then ports
        if (length < 36) {
            return invalid();
        }
        if (transport == 1) {
            r.has_source = true;
            std::memcpy(r.source.data(), addr, 16);
            r.source_port = static_cast<std::uint16_t>((addr[32] << 8) | addr[33]);
        }
    } else if (family == 3 && length < 216) {  // UNIX: two 108-byte paths
        return invalid();
    }
    // UNSPEC, UNIX and datagram transports carry nothing to use: the peer stays.
    return r;
}

}  // namespace

result parse(std::string_view bytes) {
    if (bytes.empty()) {
        return {status::need_more};
    }
    if (starts_like(bytes, v1_prefix)) {
        return bytes.size() < v1_prefix.size() ? result{status::need_more} : parse_v1(bytes);
    }
    if (starts_like(bytes, v2_signature)) {
        return bytes.size() < v2_signature.size() ? result{status::need_more} : parse_v2(bytes);
    }
    return invalid();
}

}  // namespace waitroom::gateway::proxy_protocol
