#include "waitroom/cookie/http_cookie.hpp"

#include <array>
#include <charconv>

namespace waitroom::cookie {
namespace {

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

// The characters a sealed value is made of (key id, '.', base64url), as a lookup table: the
// value of every request's cookie is checked, byte by byte.
constexpr std::array<bool, 256> value_chars = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c) {
        t[static_cast<std::size_t>(c)] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    }
    return t;
}();

bool well_formed_value(std::string_view v) noexcept {
    if (v.empty()) {
        return false;
    }
    for (char c : v) {
        if (!value_chars[static_cast<unsigned char>(c)]) {
            return false;
        }
    }
    return true;
}

}  // namespace

namespace {

std::string with_suffix(std::string_view base, std::string_view cookie_suffix) {
    std::string name(base);
    if (!cookie_suffix.empty()) {
        name.push_back('_');
        name.append(cookie_suffix);
    }
    return name;
}

}  // namespace

std::string cookie_name(std::string_view cookie_suffix) {
    return with_suffix(base_cookie_name, cookie_suffix);
}

resolved_attributes resolve_attributes(const config::cookie_attributes& attrs,
                                       bool visitor_tls) noexcept {
    resolved_attributes r;
    switch (attrs.secure) {
        case config::secure_mode::always:
            r.secure = true;
            break;
        case config::secure_mode::never:
            r.secure = false;
            break;
        case config::secure_mode::auto_:
            r.secure = visitor_tls;
            break;
    }
    r.samesite = attrs.samesite;
    if (r.samesite == config::same_site::auto_) {
        // Cloudflare's auto: a cookie that is Secure may travel cross-site; one that is not
        // stays Lax (browsers drop SameSite=None without Secure).
        r.samesite = r.secure ? config::same_site::none : config::same_site::lax;
    }
    return r;
}

void append_set_cookie_value(std::string& out, std::string_view name, std::string_view value,
                             std::chrono::seconds max_age, const config::cookie_attributes& attrs,
                             bool visitor_tls) {
    const resolved_attributes r = resolve_attributes(attrs, visitor_tls);
    const long long age = max_age.count() < 0 ? 0 : static_cast<long long>(max_age.count());
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, age);
    (void)ec;  // 24 digits hold any long long
    out.reserve(out.size() + name.size() + value.size() + 80);
    out.append(name).append("=").append(value);
    out.append("; Max-Age=").append(digits, end);
    out.append("; Path=/; HttpOnly; SameSite=");
    switch (r.samesite) {
        case config::same_site::strict:
            out.append("Strict");
            break;
        case config::same_site::none:
            out.append("None");
            break;
        case config::same_site::lax:
        case config::same_site::auto_:
            out.append("Lax");
            break;
    }
    if (r.secure) {
        out.append("; Secure");
    }
}

std::string set_cookie_value(std::string_view name, std::string_view value,
                             std::chrono::seconds max_age, const config::cookie_attributes& attrs,
                             bool visitor_tls) {
    std::string out;
    append_set_cookie_value(out, name, value, max_age, attrs, visitor_tls);
    return out;
}

std::optional<std::string_view> find_cookie(std::string_view header,
                                            std::string_view name) noexcept {
    return next_cookie(header, name);
}

std::optional<std::string_view> next_cookie(std::string_view& header, std::string_view name,
                                            std::string_view known) noexcept {
    while (!header.empty()) {
        const std::size_t semi = header.find(';');
        std::string_view pair = header.substr(0, semi);
        header = semi == std::string_view::npos ? std::string_view{} : header.substr(semi + 1);
        const std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos || trim(pair.substr(0, eq)) != name) {
            continue;
        }
        std::string_view value = trim(pair.substr(eq + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
            value = value.substr(1, value.size() - 2);
        }
        if ((!known.empty() && value == known) || well_formed_value(value)) {
            return value;
        }
    }
    return std::nullopt;
}

}  // namespace waitroom::cookie
