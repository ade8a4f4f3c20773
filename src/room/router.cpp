#include "waitroom/room/router.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <cstring>

namespace waitroom::room {

namespace {

char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = lower(c);
    }
    return out;
}

}  // namespace

bool segment_prefix(std::string_view prefix, std::string_view path, bool case_insensitive) {
    if (prefix.empty() || prefix == "/") {
        return true;
    }
    if (path.size() < prefix.size()) {
        return false;
    }
    std::string_view head = path.substr(0, prefix.size());
    if (case_insensitive ? !iequals(head, prefix) : head != prefix) {
        return false;
    }
    return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

std::optional<std::array<std::uint8_t, 16>> parse_ip(std::string_view text) {
    // A stack copy for inet_pton's C string: X-Forwarded-For entries are parsed per request.
    char s[INET6_ADDRSTRLEN + 1];
    if (text.empty() || text.size() >= sizeof s) {
        return std::nullopt;
    }
    std::memcpy(s, text.data(), text.size());
    s[text.size()] = '\0';
    std::array<std::uint8_t, 16> out{};
    in_addr v4{};
    if (inet_pton(AF_INET, s, &v4) == 1) {
        out[10] = 0xff;
        out[11] = 0xff;
        std::memcpy(out.data() + 12, &v4, 4);
        return out;
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, s, &v6) == 1) {
        std::memcpy(out.data(), &v6, 16);
        return out;
    }
    return std::nullopt;
}

bool in_network(const std::array<std::uint8_t, 16>& ip, const std::array<std::uint8_t, 16>& net,
                unsigned prefix_len) {
    unsigned bits = std::min(prefix_len, 128u);
    for (unsigned i = 0; i < 16 && bits > 0; ++i) {
        unsigned take = std::min(bits, 8u);
        auto mask = static_cast<std::uint8_t>(0xff00u >> take);
        if ((ip[i] & mask) != (net[i] & mask)) {
            return false;
        }
        bits -= take;
    }
    return true;
}

bool constant_time_equal(std::string_view secret, std::string_view given) {
    // The time depends on the secret's length only: every byte of it is compared, whatever the
    // guess, so a visitor timing answers learns nothing of where a guess went wrong.
    volatile unsigned char diff = secret.size() == given.size() ? 0 : 1;
    for (std::size_t i = 0; i < secret.size(); ++i) {
        const char g = i < given.size() ? given[i] : '\0';
        diff = static_cast<unsigned char>(diff | (secret[i] ^ g));
    }
    return diff == 0;
}

bypass_matcher::bypass_matcher(const std::vector<config::bypass_rule>& rules) : rules_(rules) {
    for (const auto& r : rules_) {
        if (r.type == config::bypass_rule::kind::header &&
            std::none_of(secret_fields_.begin(), secret_fields_.end(),
                         [&](const std::string& n) { return iequals(n, r.value); })) {
            secret_fields_.push_back(r.value);
        }
    }
}

bool bypass_matcher::matches(const request_view& req, std::string_view path) const {
    using kind = config::bypass_rule::kind;
    for (const auto& r : rules_) {
        switch (r.type) {
            case kind::path_prefix:
                // Both readings of segment parameters must be under the prefix: stripped per
                // segment (Tomcat, Spring: `path`) and the path ended at the first ';'. Else
                // `/shop;/static` would pass a `/shop/static` rule to an origin serving `/shop`.
                if (segment_prefix(r.value, path) &&
                    (req.path_to_first_param.empty() ||
                     segment_prefix(r.value, req.path_to_first_param))) {
                    return true;
                }
                break;
            case kind::header:
                if (req.headers != nullptr) {
                    auto v = req.headers->find(r.value);
                    if (v && constant_time_equal(r.header_value, *v)) {
                        return true;
                    }
                }
                break;
            case kind::method:
                if (iequals(req.method, r.value)) {
                    return true;
                }
                break;
            case kind::ip:
                if (req.has_client_ip && in_network(req.client_ip, r.net, r.prefix_len)) {
                    return true;
                }
                break;
        }
    }
    return false;
}

router::router(const std::vector<config::room>& rooms) {
    auto add = [&](const std::string& host, const std::string& path, std::size_t idx) {
        entry e{path.empty() ? std::string("/") : path, idx, rooms[idx].case_insensitive_paths};
        if (host.empty() || host == "*") {
            any_host_.push_back(std::move(e));
        } else {
            by_host_[lowercase(host)].push_back(std::move(e));
        }
    };
    for (std::size_t i = 0; i < rooms.size(); ++i) {
        add(rooms[i].host, rooms[i].path, i);
        for (const auto& r : rooms[i].additional_routes) {
            add(r.host, r.path, i);
        }
    }
    auto by_len = [](const entry& a, const entry& b) { return a.path.size() > b.path.size(); };
    std::stable_sort(any_host_.begin(), any_host_.end(), by_len);
    for (auto& [h, list] : by_host_) {
        std::stable_sort(list.begin(), list.end(), by_len);
    }
}

std::optional<std::size_t> router::match(std::string_view host, std::string_view path) const {
    const entry* best = nullptr;
    if (!by_host_.empty()) {
        auto it = by_host_.find(host);
        if (it != by_host_.end()) {
            for (const auto& e : it->second) {
                if (segment_prefix(e.path, path, e.case_insensitive)) {
                    best = &e;
                    break;
                }
            }
        }
    }
    for (const auto& e : any_host_) {
        // Lists are longest-first: the first match is the best of its list. An exact host wins
        // a tie in path length.
        if (best != nullptr && e.path.size() <= best->path.size()) {
            break;
        }
        if (segment_prefix(e.path, path, e.case_insensitive)) {
            best = &e;
            break;
        }
    }
    if (best == nullptr) {
        return std::nullopt;
    }
    return best->room;
}

}  // namespace waitroom::room
