#pragma once
// The HTTP side of the admission cookie: its name, the Set-Cookie header we send, and finding
// our value in a request's Cookie header. Pure string work, no allocation when only reading.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "waitroom/config/config.hpp"
#include "waitroom/room/challenge_cookie.hpp"

namespace waitroom::cookie {

inline constexpr std::string_view base_cookie_name = "_cfwaitingroom";

// `_cfwaitingroom`, or `_cfwaitingroom_<suffix>` when a suffix is set (Cloudflare's naming).
std::string cookie_name(std::string_view cookie_suffix);

// The cookie that carries a challenged visitor's seed: see waitroom/room/challenge_cookie.hpp.
using room::base_challenge_cookie_name;
using room::challenge_cookie_name;

// The SameSite and Secure a response gets, after resolving Cloudflare's `auto`:
// secure auto = Secure when the visitor reached us over TLS (directly or per a trusted
// X-Forwarded-Proto, which the caller decides); samesite auto = None when Secure, else Lax.
struct resolved_attributes {
    config::same_site samesite = config::same_site::lax;  // never auto_
    bool secure = false;
};
resolved_attributes resolve_attributes(const config::cookie_attributes& attrs,
                                       bool visitor_tls) noexcept;

// The value of a Set-Cookie header:
// `<name>=<value>; Max-Age=<s>; Path=/; HttpOnly; SameSite=<x>[; Secure]`.
// A negative max_age is written as 0 (delete the cookie).
std::string set_cookie_value(std::string_view name, std::string_view value,
                             std::chrono::seconds max_age, const config::cookie_attributes& attrs,
                             bool visitor_tls);
// The same, appended to `out` (a response head under construction).
void append_set_cookie_value(std::string& out, std::string_view name, std::string_view value,
                             std::chrono::seconds max_age, const config::cookie_attributes& attrs,
                             bool visitor_tls);

// Our cookie's value in a request `Cookie:` header: the first pair named exactly `name` whose
// value is well formed (non-empty, only [A-Za-z0-9._-], optionally in double quotes). Tolerates
// extra spaces, empty pairs and other cookies. The view points into `header`.
std::optional<std::string_view> find_cookie(std::string_view header,
                                            std::string_view name) noexcept;

// The same search, resumable: returns the next such value in `header` and leaves `header` at
// what follows it, so a caller walks every value of a name in order (a request may carry
// several: one host-only, one planted for a parent domain by a sibling subdomain…). A value
// equal to `known`, one this function returned before (a connection's last cookie), is returned
// without its characters being checked again: one compare instead of a look-up per byte.
std::optional<std::string_view> next_cookie(std::string_view& header, std::string_view name,
                                            std::string_view known = {}) noexcept;

}  // namespace waitroom::cookie
