#include "client_ip.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "forward_headers.hpp"

#include "waitroom/room/router.hpp"

namespace waitroom::gateway {

namespace {

bool all_digits(std::string_view s) {
    if (s.empty() || s.size() > 5) {
        return false;
    }
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
    }
    return true;
}

}  // namespace

bool is_trusted(const std::vector<config::cidr>& networks, const ip_bytes& ip) {
    for (const auto& n : networks) {
        if (room::in_network(ip, n.net, n.prefix_len)) {
            return true;
        }
    }
    return false;
}

std::optional<ip_bytes> parse_forwarded_address(std::string_view entry) {
    entry = trim_ows(entry);
    if (entry.empty()) {
        return std::nullopt;
    }
    if (entry.front() == '[') {
        auto close = entry.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        auto rest = entry.substr(close + 1);
        if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) {
            return std::nullopt;
        }
        // Brackets hold IPv6 only ("[192.0.2.1]" is junk).
        auto inside = entry.substr(1, close - 1);
        return inside.find(':') == std::string_view::npos ? std::nullopt : room::parse_ip(inside);
    }
    // One colon: IPv4 with a port. More: IPv6 without brackets (no port possible).
    auto colon = entry.find(':');
    if (colon != std::string_view::npos && entry.find(':', colon + 1) == std::string_view::npos) {
        if (!all_digits(entry.substr(colon + 1))) {
            return std::nullopt;
        }
        auto v4 = entry.substr(0, colon);
        return room::parse_ip(v4);
    }
    return room::parse_ip(entry);
}

std::optional<ip_bytes> select_client(std::span<const std::string_view> forwarded_for,
                                      const std::vector<config::cidr>& trusted) {
    std::optional<ip_bytes> last;
    for (auto field = forwarded_for.rbegin(); field != forwarded_for.rend(); ++field) {
        std::string_view rest = *field;
        while (true) {
            auto comma = rest.rfind(',');
            auto entry = comma == std::string_view::npos ? rest : rest.substr(comma + 1);
            if (!trim_ows(entry).empty()) {  // empty list elements are allowed (RFC 9110 §5.6.1)
                auto ip = parse_forwarded_address(entry);
                if (!ip) {
                    return last;
                }
                last = ip;
                if (!is_trusted(trusted, *ip)) {
                    return last;
                }
            }
            if (comma == std::string_view::npos) {
                break;
            }
            rest = rest.substr(0, comma);
        }
    }
    return last;
}

void format_ip(const ip_bytes& ip, std::string& out) {
    char buf[INET6_ADDRSTRLEN];
    static constexpr std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const char* s = nullptr;
    if (std::memcmp(ip.data(), mapped, sizeof mapped) == 0) {
        s = ::inet_ntop(AF_INET, ip.data() + 12, buf, sizeof buf);
    } else {
        s = ::inet_ntop(AF_INET6, ip.data(), buf, sizeof buf);
    }
    out.assign(s != nullptr ? s : "");
}

}  // namespace waitroom::gateway
