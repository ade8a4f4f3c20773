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

// What routing and bypass rules look at. Views only; valid for the call. The gateway fills
// host and path from util::canonicalize_request, so they are the forms the origin receives.
struct request_view {
    std::string_view method = "GET";
    std::string_view host;        // canonical host name (lower case, no port); "" = none
    std::string_view path = "/";  // canonical match path (no query, no segment parameters)
    // The canonical path cut at its first ';': what an origin that ends the path there serves.
    // Bypass path rules must match it too. "" = the same as `path` (no ';' in the path).
    std::string_view path_to_first_param;
    std::array<std::uint8_t, 16> client_ip{};  // IPv6, IPv4 as v4-mapped (::ffff:a.b.c.d)
    bool has_client_ip = false;
    const header_lookup* headers = nullptr;  // null: no headers match
};

// "10.1.2.3" / "::1" → 16 bytes (IPv4 v4-mapped); nullopt when not an address. Does not
// allocate. An IPv6 text always holds a ':', an IPv4 one never does.
std::optional<std::array<std::uint8_t, 16>> parse_ip(std::string_view text);

// True when `ip` lies in net/prefix_len (16-byte forms, IPv4 v4-mapped).
bool in_network(const std::array<std::uint8_t, 16>& ip, const std::array<std::uint8_t, 16>& net,
                unsigned prefix_len);

// `given == secret`, in a time that depends on the secret's length only.
bool constant_time_equal(std::string_view secret, std::string_view given);

// The compiled bypass rules of a room.
class bypass_matcher {
  public:
    explicit bypass_matcher(const std::vector<config::bypass_rule>& rules);
    bool matches(const request_view& req, std::string_view path) const;
    // The field names of the header rules, each once: the origin never sees them (a guessed or
    // leaked secret would otherwise reach it), whether a rule matched or not.
    const std::vector<std::string>& secret_fields() const { return secret_fields_; }

  private:
    std::vector<config::bypass_rule> rules_;
    std::vector<std::string> secret_fields_;
};

// Host + path prefix → room index. Most specific wins: the longest path, then an exact host
// over "any host". Path prefixes match whole segments ("/shop" matches "/shop" and "/shop/x",
// not "/shopping"; a prefix ending in "/" matches anything below it); a room with
// case_insensitive_paths compares them ignoring ASCII letter case. `host` and `path` are the
// canonical forms (util/request_target.hpp).
class router {
  public:
    router() = default;
    explicit router(const std::vector<config::room>& rooms);
    // Index into the rooms given at construction, or nullopt.
    std::optional<std::size_t> match(std::string_view host, std::string_view path) const;
    // True when some room or route names a host (not "any host").
    bool names_hosts() const { return !by_host_.empty(); }
    // True when `host` (canonical) is a host some room or route names.
    bool knows_host(std::string_view host) const { return by_host_.find(host) != by_host_.end(); }

  private:
    struct entry {
        std::string path;
        std::size_t room = 0;
        bool case_insensitive = false;
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

// Whole-segment prefix of a canonical path: "/shop" matches "/shop" and "/shop/…", not
// "/shopping"; a prefix ending in "/" matches anything below it; "/" matches every path.
bool segment_prefix(std::string_view prefix, std::string_view path, bool case_insensitive = false);

}  // namespace waitroom::room
