// Value syntaxes of the configuration file; see values.hpp.

#include "waitroom/config/values.hpp"

#include <arpa/inet.h>

#include <boost/url/grammar/ci_string.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <cctype>
#include <chrono>
#include <cstring>

namespace waitroom::config {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Reads decimal digits at s[i..]; at least one, value capped so callers can range-check.
std::optional<std::uint64_t> read_digits(std::string_view s, std::size_t& i,
                                         std::size_t max_digits = 18) {
    std::size_t start = i;
    std::uint64_t v = 0;
    while (i < s.size() && is_digit(s[i])) {
        if (i - start >= max_digits) {
            return std::nullopt;
        }
        v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
        ++i;
    }
    if (i == start) {
        return std::nullopt;
    }
    return v;
}

std::optional<std::uint64_t> whole_number(std::string_view s, std::size_t max_digits = 18) {
    std::size_t i = 0;
    auto v = read_digits(s, i, max_digits);
    if (!v || i != s.size()) {
        return std::nullopt;
    }
    return v;
}

std::optional<std::uint16_t> parse_port(std::string_view s) {
    auto v = whole_number(s, 5);
    if (!v || *v > 65535) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(*v);
}

bool is_host_name(std::string_view h) {
    if (h.empty() || h.size() > 253) {
        return false;
    }
    for (char c : h) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
            return false;
        }
    }
    return true;
}

bool is_ipv6(const std::string& h) {
    in6_addr a{};
    return ::inet_pton(AF_INET6, h.c_str(), &a) == 1;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

// Host (possibly "[v6]") and optional ":port" of an authority; port stays 0 when absent.
std::optional<host_port> split_authority(std::string_view a, bool port_required) {
    host_port out;
    std::string_view rest;
    if (!a.empty() && a.front() == '[') {
        auto close = a.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        out.host = std::string(a.substr(1, close - 1));
        if (!is_ipv6(out.host)) {
            return std::nullopt;
        }
        rest = a.substr(close + 1);
    } else {
        auto colon = a.rfind(':');
        if (colon != std::string_view::npos &&
            a.substr(0, colon).find(':') != std::string_view::npos) {
            return std::nullopt;  // an IPv6 address needs brackets
        }
        out.host = std::string(a.substr(0, colon));
        if (!is_host_name(out.host)) {
            return std::nullopt;
        }
        rest = colon == std::string_view::npos ? std::string_view{} : a.substr(colon);
    }
    if (rest.empty()) {
        return port_required ? std::nullopt : std::optional<host_port>(out);
    }
    if (rest.front() != ':') {
        return std::nullopt;
    }
    auto port = parse_port(rest.substr(1));
    if (!port) {
        return std::nullopt;
    }
    out.port = *port;
    return out;
}

namespace urls = boost::urls;

// An absolute URL with an authority, as Boost.URL reads it (RFC 3986), or nullopt.
std::optional<urls::url_view> parse_url(std::string_view s, std::string_view scheme,
                                        std::string_view tls_scheme = {}) {
    auto u = urls::parse_uri(s);
    if (!u || !u->has_authority()) {
        return std::nullopt;
    }
    if (!urls::grammar::ci_is_equal(u->scheme(), scheme) &&
        (tls_scheme.empty() || !urls::grammar::ci_is_equal(u->scheme(), tls_scheme))) {
        return std::nullopt;
    }
    // Boost.URL 1.81 lets a path follow the authority without a '/' (boostorg/url#636): it reads
    // "u:a@b@h/0" as host "b" with path "@h/0", and "h:x/0" as an empty port and path "x/0".
    // RFC 3986 wants the path empty or starting with '/', and anything else is refused here.
    if (!u->encoded_path().empty() && !u->is_path_absolute()) {
        return std::nullopt;
    }
    return *u;
}

// The host and port of a URL's authority. The host is a name of [A-Za-z0-9._-] (no escapes: it
// goes as written to the resolver and to a Host header), a dotted quad or an IPv6 literal,
// returned without brackets (an IPvFuture literal is refused; one with a zone does not parse). A
// written port is 1-65535; an absent one comes back as 0.
std::optional<host_port> url_authority(const urls::url_view& u) {
    host_port out;
    switch (u.host_type()) {
        case urls::host_type::ipv4:
        case urls::host_type::ipv6:
            out.host = std::string(std::string_view(u.encoded_host_address()));
            break;
        case urls::host_type::name:
            out.host = std::string(std::string_view(u.encoded_host()));
            if (!is_host_name(out.host)) {
                return std::nullopt;
            }
            break;
        default:
            return std::nullopt;
    }
    if (u.has_port()) {
        auto port = parse_port(u.port());
        if (!port || *port == 0) {
            return std::nullopt;
        }
        out.port = *port;
    }
    return out;
}

}  // namespace

std::optional<duration> parse_duration(std::string_view s) {
    // Units largest first; "ms" is tried before "m".
    struct unit {
        std::string_view name;
        std::int64_t ms;
    };
    static constexpr unit units[] = {{"h", 3'600'000}, {"ms", 1}, {"m", 60'000}, {"s", 1'000}};
    static constexpr int rank[] = {0, 3, 1, 2};  // h, ms, m, s in descending size order
    if (s.empty()) {
        return std::nullopt;
    }
    std::int64_t total = 0;
    int last_rank = -1;
    std::size_t i = 0;
    while (i < s.size()) {
        auto amount = read_digits(s, i, 9);
        if (!amount) {
            return std::nullopt;
        }
        int found = -1;
        for (int u = 0; u < 4; ++u) {
            if (s.substr(i, units[u].name.size()) == units[u].name) {
                found = u;
                break;
            }
        }
        if (found < 0 || rank[found] <= last_rank) {
            return std::nullopt;
        }
        last_rank = rank[found];
        i += units[found].name.size();
        total += static_cast<std::int64_t>(*amount) * units[found].ms;
    }
    return duration{total};
}

std::optional<std::uint64_t> parse_size(std::string_view s) {
    std::size_t i = 0;
    auto amount = read_digits(s, i, 12);
    if (!amount) {
        return std::nullopt;
    }
    std::string_view suffix = s.substr(i);
    std::uint64_t mult = 0;
    if (suffix.empty() || suffix == "B") {
        mult = 1;
    } else if (suffix == "KiB") {
        mult = 1ull << 10;
    } else if (suffix == "MiB") {
        mult = 1ull << 20;
    } else if (suffix == "GiB") {
        mult = 1ull << 30;
    } else if (suffix == "KB" || suffix == "kB") {
        mult = 1000;
    } else if (suffix == "MB") {
        mult = 1000 * 1000;
    } else if (suffix == "GB") {
        mult = 1000 * 1000 * 1000;
    } else {
        return std::nullopt;
    }
    return *amount * mult;
}

std::optional<time_point> parse_rfc3339(std::string_view s) {
    using namespace std::chrono;
    // Fixed layout: YYYY-MM-DDTHH:MM:SS, then an optional fraction, then Z or ±hh:mm.
    if (s.size() < 20) {
        return std::nullopt;
    }
    auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
        std::size_t i = pos;
        auto v = read_digits(s.substr(0, pos + len), i, len);
        if (!v || i != pos + len) {
            return std::nullopt;
        }
        return static_cast<int>(*v);
    };
    auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
         se = num(17, 2);
    if (!y || !mo || !d || !h || !mi || !se || s[4] != '-' || s[7] != '-' || s[13] != ':' ||
        s[16] != ':' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ')) {
        return std::nullopt;
    }
    year_month_day ymd{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
    // The clock counts nanoseconds in 64 bits (years 1677-2262): a year past that range would
    // overflow the conversion, so times are kept between 1970 and 2200.
    if (!ymd.ok() || *y < 1970 || *y > 2200 || *h > 23 || *mi > 59 || *se > 59) {
        return std::nullopt;
    }
    std::size_t i = 19;
    nanoseconds frac{0};
    if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t start = i;
        std::int64_t scale = 100'000'000;
        while (i < s.size() && is_digit(s[i])) {
            frac += nanoseconds{(s[i] - '0') * scale};
            scale /= 10;
            ++i;
        }
        if (i == start) {
            return std::nullopt;
        }
    }
    minutes offset{0};
    std::string_view zone = s.substr(i);
    if (zone == "Z" || zone == "z") {
        // UTC
    } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
        std::size_t j = 1;
        auto oh = read_digits(zone, j, 2);
        std::size_t k = 4;
        auto om = read_digits(zone, k, 2);
        if (!oh || !om || j != 3 || k != 6 || *oh > 23 || *om > 59) {
            return std::nullopt;
        }
        offset = hours{*oh} + minutes{*om};
        if (zone[0] == '-') {
            offset = -offset;
        }
    } else {
        return std::nullopt;
    }
    auto t = sys_days{ymd} + hours{*h} + minutes{*mi} + seconds{*se} - offset;
    return time_point{duration_cast<system_clock::duration>(t.time_since_epoch() + frac)};
}

std::optional<cidr> parse_cidr(std::string_view s) {
    cidr out;
    auto slash = s.find('/');
    std::string addr(s.substr(0, slash));
    unsigned max_len = 0;
    in_addr v4{};
    in6_addr v6{};
    if (::inet_pton(AF_INET, addr.c_str(), &v4) == 1) {
        out.net[10] = 0xff;
        out.net[11] = 0xff;
        std::memcpy(out.net.data() + 12, &v4, 4);
        max_len = 32;
    } else if (::inet_pton(AF_INET6, addr.c_str(), &v6) == 1) {
        std::memcpy(out.net.data(), &v6, 16);
        max_len = 128;
    } else {
        return std::nullopt;
    }
    unsigned len = max_len;
    if (slash != std::string_view::npos) {
        auto v = whole_number(s.substr(slash + 1), 3);
        if (!v || *v > max_len) {
            return std::nullopt;
        }
        len = static_cast<unsigned>(*v);
    }
    out.prefix_len = len + (128 - max_len);
    for (unsigned bit = out.prefix_len; bit < 128; ++bit) {
        out.net[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
    }
    return out;
}

std::optional<host_port> parse_host_port(std::string_view s) {
    return split_authority(s, true);
}

std::optional<host_port> parse_authority(std::string_view s) {
    return split_authority(s, false);
}

bool is_loopback_host(std::string_view host) {
    if (lower(host) == "localhost") {
        return true;
    }
    const std::string h(host);
    in_addr v4{};
    if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) {
        return (ntohl(v4.s_addr) >> 24) == 127;
    }
    in6_addr v6{};
    if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
        static constexpr std::uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        return IN6_IS_ADDR_LOOPBACK(&v6) ||
               (std::memcmp(v6.s6_addr, v4_mapped, sizeof v4_mapped) == 0 && v6.s6_addr[12] == 127);
    }
    return false;
}

std::optional<http_url> parse_http_url(std::string_view s) {
    auto u = parse_url(s, "http", "https");
    // Credentials, a query or a fragment have no place in an origin's URL: refused, not dropped.
    if (!u || u->has_userinfo() || u->has_query() || u->has_fragment()) {
        return std::nullopt;
    }
    auto auth = url_authority(*u);
    if (!auth) {
        return std::nullopt;
    }
    http_url out;
    out.tls = urls::grammar::ci_is_equal(u->scheme(), "https");
    out.host = lower(auth->host);
    out.port = auth->port != 0 ? auth->port : (out.tls ? 443 : 80);
    out.base_path = std::string(std::string_view(u->encoded_path()));
    while (!out.base_path.empty() && out.base_path.back() == '/') {
        out.base_path.pop_back();
    }
    return out;
}

std::optional<redis_url> parse_redis_url(std::string_view s) {
    auto u = parse_url(s, "redis");
    // Options in a query (timeouts, TLS) are not read, so they are refused rather than ignored.
    if (!u || u->has_query() || u->has_fragment()) {
        return std::nullopt;
    }
    auto auth = url_authority(*u);
    if (!auth) {
        return std::nullopt;
    }
    redis_url out;
    out.host = auth->host;
    if (auth->port != 0) {
        out.port = auth->port;
    }
    if (u->has_password()) {
        out.username = u->user();
        out.password = u->password();
    } else if (u->has_userinfo()) {
        out.password = u->user();  // "redis://secret@host" as redis-cli reads it
    }
    std::string_view path = u->encoded_path();
    if (path.size() > 1) {
        auto db = whole_number(path.substr(1), 5);
        if (!db) {
            return std::nullopt;
        }
        out.db = static_cast<unsigned>(*db);
    }
    return out;
}

std::string redact_url(std::string_view url) {
    auto scheme = url.find("://");
    if (scheme == std::string_view::npos) {
        return std::string(url);
    }
    std::string_view rest = url.substr(scheme + 3);
    // The user info is taken to end at the last '@': this also gets text that is no valid URL (a
    // raw '/', '?', '#' or '@' in a password), and a log line had better hide too much than show
    // a password.
    auto at = rest.rfind('@');
    if (at == std::string_view::npos) {
        return std::string(url);
    }
    std::string_view userinfo = rest.substr(0, at);
    auto colon = userinfo.find(':');
    std::string out(url.substr(0, scheme + 3));
    if (colon != std::string_view::npos) {
        out.append(userinfo.substr(0, colon + 1));
    }
    out.append("***");
    out.append(rest.substr(at));
    return out;
}

std::string slug(std::string_view name) {
    std::string out;
    bool dash = false;
    for (char c : name) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x80 && std::isalnum(u)) {
            if (dash && !out.empty()) {
                out.push_back('-');
            }
            dash = false;
            out.push_back(static_cast<char>(std::tolower(u)));
        } else {
            dash = true;
        }
    }
    return out;
}

}  // namespace waitroom::config
