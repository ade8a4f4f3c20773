#pragma once
// Parsers for the value syntaxes of the configuration file (durations, sizes, RFC 3339 times,
// CIDRs, listen addresses, URLs). Pure functions, shared by the loader, the admin API and tests.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "waitroom/config/config.hpp"

namespace waitroom::config {

// "250ms", "90s", "5m", "1h30m": integer amounts with units h, m, s, ms, each at most once and
// largest first. A bare number has no unit and is rejected.
std::optional<duration> parse_duration(std::string_view text);

// "16384", "16KiB", "1MiB", "1GiB" (also KB/MB/GB = powers of 1000, and B).
std::optional<std::uint64_t> parse_size(std::string_view text);

// RFC 3339: "2026-12-01T10:00:00Z", "2026-12-01T11:00:00.5+01:00"; years 1970-2200.
std::optional<time_point> parse_rfc3339(std::string_view text);

// "10.0.0.0/8", "2001:db8::/32", or a single address. IPv4 becomes v4-mapped IPv6 (prefix + 96);
// host bits are cleared.
std::optional<cidr> parse_cidr(std::string_view text);

// "host:port" or "[v6]:port"; the host is returned without brackets. Port 0 is allowed.
struct host_port {
    std::string host;
    std::uint16_t port = 0;
};
std::optional<host_port> parse_host_port(std::string_view text);

// An authority as a Host header carries it: "host", "host:port", "[v6]" or "[v6]:port". The
// host comes back without brackets, its case kept; the port is 0 when absent.
std::optional<host_port> parse_authority(std::string_view text);

// True for a loopback literal (127.0.0.0/8 in dotted-quad form, ::1, ::ffff:127.x.y.z) or the
// name "localhost" (any case). `host` as parse_host_port and parse_authority return it.
bool is_loopback_host(std::string_view host);

// URLs are read by Boost.URL to RFC 3986. In both kinds the host is a name of [A-Za-z0-9._-], a
// dotted quad or a bracketed IPv6 literal (returned without brackets), and a written port is
// 1-65535.

// "http://host[:port][/base]" or "https://...". Host lowercased, port defaulted (80/443),
// base path as written (escapes kept) without trailing slash ("" for none). No user info, query
// or fragment.
struct http_url {
    bool tls = false;
    std::string host;
    std::uint16_t port = 0;
    std::string base_path;
};
std::optional<http_url> parse_http_url(std::string_view text);

// "redis://[[user]:password@]host[:port][/db]"; "redis://password@host" as redis-cli reads it.
// User and password are percent-decoded: '@', '/', '?', '#', '%' (and ':' in a user) are written
// escaped ("p%40ss" for "p@ss"). A decoded NUL is kept, as AUTH sends it with its length. db is
// 0-99999 (whether the server has it is the server's answer). No query or fragment.
struct redis_url {
    std::string host;
    std::uint16_t port = 6379;
    unsigned db = 0;
    std::string username;
    std::string password;
};
std::optional<redis_url> parse_redis_url(std::string_view text);

// `url` fit for a log line: the password of its user info replaced by "***"
// ("redis://app:***@db:6379/0"; "redis://***@db" where the user info is the password alone).
// A URL without user info comes back unchanged.
std::string redact_url(std::string_view url);

// Room id derived from a name: lowercase [a-z0-9], other runs become one "-", trimmed.
std::string slug(std::string_view name);

}  // namespace waitroom::config
