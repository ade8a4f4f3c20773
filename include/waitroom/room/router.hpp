#pragma once
// Routing a request to a room and the bypass rules, compiled once from the config (host tables
// sorted by specificity, CIDRs parsed) so a request costs a few string compares.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::room {

// Header access for bypass rules, implemented by the gateway over its parsed request.
class header_lookup {
  public:
    virtual ~header_lookup() = default;
    // The value of the first header named `name` (case-insensitive), or nullopt when absent.
    virtual std::optional<std::string_view> find(std::string_view name) const = 0;
};

// What routing and bypass rules look at. Views only; valid for the call.
struct request_view {
    std::string_view method = "GET";
    std::string_view host;    // Host header as received (port and letter case are ignored)
    std::string_view target;  // request target; the query string is ignored
    std::array<std::uint8_t, 16> client_ip{};  // IPv6, IPv4 as v4-mapped (::ffff:a.b.c.d)
    bool has_client_ip = false;
    const header_lookup* headers = nullptr;  // null: no headers match
};

// "10.1.2.3" / "::1" → 16 bytes (IPv4 v4-mapped); nullopt when not an address.
std::optional<std::array<std::uint8_t, 16>> parse_ip(std::string_view text);

// One compiled bypass rule of a room.
class bypass_matcher {
  public:
    explicit bypass_matcher(const std::vector<config::bypass_rule>& rules);
    bool matches(const request_view& req, std::string_view path) const;

  private:
    std::vector<config::bypass_rule> rules_;
};

// Host + path prefix → room index. Most specific wins: the longest path, then an exact host
// over "any host". Path prefixes match whole segments ("/shop" matches "/shop" and "/shop/x",
// not "/shopping"; a prefix ending in "/" matches anything below it).
class router {
  public:
    router() = default;
    explicit router(const std::vector<config::room>& rooms);
    // Index into the rooms given at construction, or nullopt.
    std::optional<std::size_t> match(std::string_view host, std::string_view path) const;

  private:
    struct entry {
        std::string path;
        std::size_t room = 0;
    };
    // Looks hosts up by string_view: no allocation per request.
    struct host_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const {
            return std::hash<std::string_view>{}(s);
        }
    };
    // Each list sorted by path length, longest first.
    std::unordered_map<std::string, std::vector<entry>, host_hash, std::equal_to<>> by_host_;
    std::vector<entry> any_host_;
};

// Lowercases and strips the port (and IPv6 brackets are kept): "Shop.Example.com:8080" →
// "shop.example.com". Writes into `buf` only when a change is needed.
std::string_view normalize_host(std::string_view host, std::string& buf);
// The path of a request target: "/a/b?x=1" → "/a/b"; absolute-form targets keep their path.
std::string_view target_path(std::string_view target);

}  // namespace waitroom::room
