#pragma once
// The one reading of a request's target and Host (RFC 9112 §3.2, RFC 3986 §5.2.4): the gateway
// runs it once per request, and the room router, the bypass rules, the origin request and the
// config checks all use its result, so what a room matched is what the origin serves.
// It sits in util/ (pure, no I/O) because the config loader checks room paths with it too.
//
// Canonical path:
//   - dot segments removed; "..", also when it climbs above the root, is refused;
//   - empty segments merged ("//" → "/"); a trailing slash is kept;
//   - %XX of an unreserved character (A-Z a-z 0-9 - . _ ~) decoded, every other escape in
//     upper-case hex; raw bytes that are not pchars ("<>^`{|}", bytes ≥ 0x80) escaped the same
//     way; an escaped "/", "\", NUL or control, a raw "\" or a bad escape is refused;
//   - segment parameters (";…", raw ";" only) are kept, but a segment whose name is empty, "."
//     or ".." loses them with it ("/a/..;x/b" → "/b", "/;x/b" → "/b");
//   - the match path is the canonical path without segment parameters: rooms and bypass rules
//     route on it (Tomcat and Spring strip them before routing too).
// The query is kept as received (refused when it holds a control, space or "#") and never routed.

#include <string>
#include <string_view>

namespace waitroom::util {

enum class target_status {
    ok,
    bad_request,         // 400
    method_not_allowed,  // 405 (CONNECT)
};

enum class target_form { origin, absolute, asterisk };

// Scratch the canonical views may point into; keep one per connection so a request that needs
// rewriting allocates only the first time.
struct target_buffers {
    std::string path;
    std::string match;
    std::string host;
};

// A parsed request target. Views point into the target given or into `target_buffers`.
struct request_target {
    target_status status = target_status::ok;
    std::string_view problem;  // why it was refused (a literal), "" when ok
    target_form form = target_form::origin;
    std::string_view authority;   // absolute-form authority as received; "" otherwise
    std::string_view path;        // canonical path ("/" for "*"), segment parameters kept
    std::string_view match_path;  // canonical path without segment parameters
    std::string_view query;       // "?…" as received, or ""
};

// A validated Host (or absolute-form authority).
struct host_view {
    bool valid = false;
    std::string_view name;       // lower case, port and trailing dot gone: what routes
    std::string_view authority;  // name plus ":port" when one was given: forwarded as Host
};

// Parses `target` of a request with `method`. CONNECT gets method_not_allowed; "*" is allowed
// with OPTIONS only; anything but origin-form, absolute-form (http/https) and "*" is refused.
request_target parse_request_target(std::string_view method, std::string_view target,
                                    target_buffers& buf);

// Validates `host` as uri-host [":" port]: a DNS-like name (A-Z a-z 0-9 - _ . , no empty
// label, one trailing dot allowed), an IPv4 address or a bracketed IPv6 address; a port of at
// most 5 digits ≤ 65535. `buf` holds the lower-cased form when one is needed.
host_view parse_host(std::string_view host, std::string& buf);

// A request's target and host together, as the gateway needs them.
struct canonical_request {
    request_target target;
    host_view host;  // from the absolute-form authority, else from Host; invalid when neither
    // The status and problem of the whole request: the target's, else the Host's.
    target_status status = target_status::ok;
    std::string_view problem;
};

// `host_field` is the Host field's value, or null when the request has none; `http11` is true for
// HTTP/1.1 and later, which must carry a valid Host (even with an absolute-form target, whose
// authority then wins, RFC 9112 §3.2.2).
canonical_request canonicalize_request(std::string_view method, std::string_view target,
                                       const std::string_view* host_field, bool http11,
                                       target_buffers& buf);

// True when `path` is already a canonical path without segment parameters or query: what room
// paths, path_prefix values and the origin's base path must be in the config.
bool is_canonical_path(std::string_view path);

// `path` (a canonical path with its segment parameters) cut at its first ';': what an origin
// that ends the path there serves. "" when `path` has no ';' (it is then its own match path).
constexpr std::string_view path_to_first_param(std::string_view path) {
    const auto semi = path.find(';');
    return semi == std::string_view::npos ? std::string_view{} : path.substr(0, semi);
}

}  // namespace waitroom::util
