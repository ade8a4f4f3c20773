// The one reading of a request target and Host: a table of targets, each with its canonical
// form (what is routed and forwarded) or the status it is refused with.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "waitroom/util/request_target.hpp"

namespace waitroom::util {
namespace {

struct target_case {
    std::string_view method;
    std::string_view target;
    // Expected "path+query" as forwarded, or "400" / "405".
    std::string_view forwarded;
    // Expected match path; "" = the same as the forwarded path (no parameters).
    std::string_view match = "";
};

// The merged paths of RFC 3986 §5.4 (base "http://a/b/c/d;p?q": a reference R is resolved
// against base path "/b/c/"), then §5.2.4's own examples and the request forms a visitor can
// send to get around a room.
const std::vector<target_case> cases = {
    // RFC 3986 §5.4.1 normal examples, as merged paths.
    {"GET", "/b/c/g", "/b/c/g"},
    {"GET", "/b/c/./g", "/b/c/g"},
    {"GET", "/b/c/g/", "/b/c/g/"},
    {"GET", "/g", "/g"},
    {"GET", "/b/c/d;p?y", "/b/c/d;p?y", "/b/c/d"},
    {"GET", "/b/c/g?y", "/b/c/g?y"},
    {"GET", "/b/c/;x", "/b/c/"},  // an empty segment with a parameter is an empty segment
    {"GET", "/b/c/g;x", "/b/c/g;x", "/b/c/g"},
    {"GET", "/b/c/g;x?y", "/b/c/g;x?y", "/b/c/g"},
    {"GET", "/b/c/.", "/b/c/"},
    {"GET", "/b/c/./", "/b/c/"},
    {"GET", "/b/c/..", "/b/"},
    {"GET", "/b/c/../", "/b/"},
    {"GET", "/b/c/../g", "/b/g"},
    {"GET", "/b/c/../..", "/"},
    {"GET", "/b/c/../../", "/"},
    {"GET", "/b/c/../../g", "/g"},
    // RFC 3986 §5.4.2 abnormal examples: climbing above the root is refused here.
    {"GET", "/b/c/../../../g", "400"},
    {"GET", "/b/c/../../../../g", "400"},
    {"GET", "/./g", "/g"},
    {"GET", "/../g", "400"},
    {"GET", "/b/c/g.", "/b/c/g."},
    {"GET", "/b/c/.g", "/b/c/.g"},
    {"GET", "/b/c/g..", "/b/c/g.."},
    {"GET", "/b/c/..g", "/b/c/..g"},
    {"GET", "/b/c/./../g", "/b/g"},
    {"GET", "/b/c/./g/.", "/b/c/g/"},
    {"GET", "/b/c/g/./h", "/b/c/g/h"},
    {"GET", "/b/c/g/../h", "/b/c/h"},
    {"GET", "/b/c/g;x=1/./y", "/b/c/g;x=1/y", "/b/c/g/y"},
    {"GET", "/b/c/g;x=1/../y", "/b/c/y"},
    {"GET", "/b/c/g?y/./x", "/b/c/g?y/./x"},  // the query is never rewritten
    {"GET", "/b/c/g?y/../x", "/b/c/g?y/../x"},
    // RFC 3986 §5.2.4 examples.
    {"GET", "/a/b/c/./../../g", "/a/g"},
    {"GET", "/mid/content=5/../6", "/mid/6"},
    // Plain paths stay as they are.
    {"GET", "/", "/"},
    {"GET", "/shop", "/shop"},
    {"GET", "/shop/", "/shop/"},
    {"GET", "/shop/x?a=1&b=%2F", "/shop/x?a=1&b=%2F"},
    {"GET", "/.well-known/acme", "/.well-known/acme"},
    {"GET", "/a:b@c!$&'()*+,=~-_.", "/a:b@c!$&'()*+,=~-_."},
    // Slashes merged.
    {"GET", "//shop/x", "/shop/x"},
    {"GET", "///", "/"},
    {"GET", "/shop//x//", "/shop/x/"},
    // Dot segments, also escaped and with parameters.
    {"GET", "/./shop/x", "/shop/x"},
    {"GET", "/x/../shop/x", "/shop/x"},
    {"GET", "/%2e/shop/x", "/shop/x"},
    {"GET", "/%2E%2E/x", "400"},
    {"GET", "/a/%2e%2E/shop", "/shop"},
    {"GET", "/a/.%2e/shop", "/shop"},
    {"GET", "/static/../shop/x", "/shop/x"},
    {"GET", "/static/..;/shop/x", "/shop/x"},
    {"GET", "/static/..;x=1/shop/x", "/shop/x"},
    {"GET", "/static/.;/shop", "/static/shop"},
    {"GET", "/..", "400"},
    {"GET", "/a/../..", "400"},
    // Escapes: unreserved decoded, the rest in upper-case hex.
    {"GET", "/%73hop/x", "/shop/x"},
    {"GET", "/%53%48%4f%50", "/SHOP"},
    {"GET", "/%7e%2d%5f%2e%41%7A%30", "/~-_.Az0"},
    {"GET", "/a%20b", "/a%20b"},
    {"GET", "/a%3bb", "/a%3Bb"},  // an escaped ";" is not a parameter
    {"GET", "/caf%c3%a9", "/caf%C3%A9"},
    {"GET", "/%25", "/%25"},
    {"GET", "/%3F?q", "/%3F?q"},
    {"GET", "/%2f", "400"},
    {"GET", "/a%2Fb", "400"},
    {"GET", "/a%5cb", "400"},
    {"GET", "/a%00b", "400"},
    {"GET", "/a%0d%0a", "400"},
    {"GET", "/a%7f", "400"},
    {"GET", "/a%1", "400"},
    {"GET", "/a%", "400"},
    {"GET", "/a%zz", "400"},
    {"GET", "/a%-1", "400"},
    // Raw bytes that are not pchars are escaped; "\" and controls are refused.
    {"GET", "/a|b{c}", "/a%7Cb%7Bc%7D"},
    {"GET", "/a\"<>^`", "/a%22%3C%3E%5E%60"},
    {"GET", "/caf\xc3\xa9", "/caf%C3%A9"},
    {"GET", "/a\\b", "400"},
    {"GET", "/\\shop", "400"},
    {"GET", "/a\tb", "400"},
    {"GET", "/a\x7f", "400"},
    // Segment parameters are forwarded, not matched.
    {"GET", "/shop;a/x", "/shop;a/x", "/shop/x"},
    {"GET", "/shop;jsessionid=1", "/shop;jsessionid=1", "/shop"},
    {"GET", "/;a/shop", "/shop"},
    {"GET", "/shop;a;b/x;c", "/shop;a;b/x;c", "/shop/x"},
    // Query: kept as received, but no controls, spaces or fragments.
    {"GET", "/?", "/?"},
    {"GET", "/a?b?c", "/a?b?c"},
    {"GET", "/a?%zz", "/a?%zz"},
    {"GET", "/a?b\x01", "400"},
    {"GET", "/a#frag", "400"},
    {"GET", "/a?b#frag", "400"},
    // Absolute-form: the authority routes; the path is canonical like any other.
    {"GET", "http://a.test//shop/x", "/shop/x"},
    {"GET", "HTTP://a.test/shop", "/shop"},
    {"GET", "https://a.test:8443/%73hop?x", "/shop?x"},
    {"GET", "http://a.test", "/"},
    {"GET", "http://a.test?x=1", "/?x=1"},
    {"GET", "http://a.test/../x", "400"},
    {"GET", "http:///shop", "400"},
    {"GET", "http://user@a.test/shop", "400"},
    {"GET", "ftp://a.test/shop", "400"},
    {"GET", "//a.test/shop", "/a.test/shop"},
    // Other forms.
    {"GET", "shop/x", "400"},
    {"GET", "", "400"},
    {"GET", "*", "400"},
    {"OPTIONS", "*", "*"},
    {"OPTIONS", "/x", "/x"},
    {"CONNECT", "a.test:443", "405"},
    {"CONNECT", "/x", "405"},
    {"GET", "a.test:443", "400"},
};

// What the gateway sends: "*" or the canonical path and the query.
std::string forwarded(const request_target& t) {
    if (t.form == target_form::asterisk) {
        return "*";
    }
    return std::string(t.path) + std::string(t.query);
}

TEST(RequestTarget, TableOfTargetsGivesTheirCanonicalFormOrTheirRefusal) {
    ASSERT_GE(cases.size(), 80u);
    for (const auto& c : cases) {
        target_buffers buf;
        auto t = parse_request_target(c.method, c.target, buf);
        SCOPED_TRACE(std::string(c.method) + " " + std::string(c.target));
        if (c.forwarded == "400") {
            EXPECT_EQ(t.status, target_status::bad_request);
            EXPECT_FALSE(t.problem.empty());
            continue;
        }
        if (c.forwarded == "405") {
            EXPECT_EQ(t.status, target_status::method_not_allowed);
            continue;
        }
        ASSERT_EQ(t.status, target_status::ok) << t.problem;
        EXPECT_EQ(forwarded(t), c.forwarded);
        if (t.form != target_form::asterisk) {
            EXPECT_EQ(t.match_path, c.match.empty() ? t.path : c.match);
        }
    }
}

TEST(RequestTarget, CanonicalFormIsAFixedPoint) {
    for (const auto& c : cases) {
        target_buffers buf;
        auto t = parse_request_target(c.method, c.target, buf);
        if (t.status != target_status::ok || t.form == target_form::asterisk) {
            continue;
        }
        std::string once = forwarded(t);
        std::string match(t.match_path);
        target_buffers buf2;
        auto again = parse_request_target(c.method, once, buf2);
        ASSERT_EQ(again.status, target_status::ok) << once;
        EXPECT_EQ(forwarded(again), once);
        EXPECT_EQ(again.match_path, match);
        // An already canonical target is answered with views into it: no copy.
        EXPECT_EQ(again.path.data(), once.data()) << once;
    }
}

TEST(RequestTarget, CanonicalPathsAreRecognisedForTheConfig) {
    EXPECT_TRUE(is_canonical_path("/"));
    EXPECT_TRUE(is_canonical_path("/static/"));
    EXPECT_TRUE(is_canonical_path("/caf%C3%A9"));
    EXPECT_FALSE(is_canonical_path("/caf%c3%a9"));
    EXPECT_FALSE(is_canonical_path("/%73hop"));
    EXPECT_FALSE(is_canonical_path("//shop"));
    EXPECT_FALSE(is_canonical_path("/shop/./x"));
    EXPECT_FALSE(is_canonical_path("/shop;a"));
    EXPECT_FALSE(is_canonical_path("/shop?x"));
    EXPECT_FALSE(is_canonical_path("shop"));
}

struct host_case {
    std::string_view host;
    bool valid;
    std::string_view name = "";
    std::string_view authority = "";
};

TEST(RequestHost, TableOfHostsGivesTheirCanonicalFormOrTheirRefusal) {
    const std::vector<host_case> hosts = {
        {"shop.example.com", true, "shop.example.com", "shop.example.com"},
        {"Shop.Example.COM:8443", true, "shop.example.com", "shop.example.com:8443"},
        {"shop.example.com.", true, "shop.example.com", "shop.example.com"},
        {"shop.example.com:", true, "shop.example.com", "shop.example.com"},
        {"127.0.0.1:8080", true, "127.0.0.1", "127.0.0.1:8080"},
        {"[::1]:8080", true, "[::1]", "[::1]:8080"},
        {"[2001:DB8::1]", true, "[2001:db8::1]", "[2001:db8::1]"},
        {"[::ffff:10.0.0.1]", true, "[::ffff:10.0.0.1]", "[::ffff:10.0.0.1]"},
        {"[::ffff:10.0.0.256]", false},
        {"[::ffff:10.0.0.01]", false},
        {"[::ffff:10.0.0]", false},
        {"[::ffff:10.0.0.1.]", false},
        {"localhost", true, "localhost", "localhost"},
        {"my_host-1", true, "my_host-1", "my_host-1"},
        {"", false},
        {".", false},
        {"shop..example.com", false},
        {".shop.example.com", false},
        {"shop.example.com..", false},
        {"shop example.com", false},
        {"shop.example.com:80:80", false},
        {"shop.example.com:8o", false},
        {"shop.example.com:65536", false},
        {"shop.example.com:123456", false},
        {"user@shop.example.com", false},
        {"shop.example.com/x", false},
        {"shop.example.com\\x", false},
        {"[::1", false},
        {"[::1]x", false},
        {"[1:2:3:4:5:6:7:8:9]", false},
        {"[1::2::3]", false},
        {"[shop]", false},
        {"1.2.3.999", false},
        {"127.1", false},
        {"I2.3.22.33", false},  // a name whose last label is a number must be an address
        {"01.2.3.4", false},
        {"caf\xc3\xa9.test", false},
        {"%73hop.test", false},
    };
    for (const auto& c : hosts) {
        std::string buf;
        auto h = parse_host(c.host, buf);
        SCOPED_TRACE(std::string(c.host));
        EXPECT_EQ(h.valid, c.valid);
        if (c.valid && h.valid) {
            EXPECT_EQ(h.name, c.name);
            EXPECT_EQ(h.authority, c.authority);
        }
    }
}

// parse_host's reading of a Host that is not bracketed, as it was written first (several
// passes, find_first_not_of): the one-pass reading must accept and rewrite exactly the same.
host_view reference_parse_name_host(std::string_view host, std::string& buf) {
    host_view out;
    auto digits = [](std::string_view s) {
        return s.find_first_not_of("0123456789") == std::string_view::npos;
    };
    auto valid_ipv4 = [&](std::string_view h) {
        int parts = 0;
        std::size_t i = 0;
        while (i <= h.size()) {
            std::size_t end = h.find('.', i);
            if (end == std::string_view::npos) {
                end = h.size();
            }
            std::string_view p = h.substr(i, end - i);
            if (p.empty() || p.size() > 3 || (p.size() > 1 && p[0] == '0') || !digits(p)) {
                return false;
            }
            int v = 0;
            for (char c : p) {
                v = v * 10 + (c - '0');
            }
            if (v > 255) {
                return false;
            }
            ++parts;
            i = end + 1;
        }
        return parts == 4;
    };
    auto colon = host.find(':');
    std::string_view name = host.substr(0, colon);
    std::string_view port;
    const bool has_port = colon != std::string_view::npos;
    if (has_port) {
        port = host.substr(colon + 1);
    }
    if (name.size() > 1 && name.back() == '.') {
        name.remove_suffix(1);
    }
    if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.' ||
        name.find("..") != std::string_view::npos) {
        return out;
    }
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_';
        if (!ok) {
            return out;
        }
    }
    std::string_view last_label = name.substr(name.rfind('.') + 1);
    if (!last_label.empty() && last_label.find_first_not_of("0123456789.") == std::string_view::npos &&
        !valid_ipv4(name)) {
        return out;
    }
    if (port.size() > 5 || !digits(port) || (port.size() == 5 && port > "65535")) {
        return out;
    }
    bool upper = false;
    for (char c : name) {
        upper = upper || (c >= 'A' && c <= 'Z');
    }
    out.valid = true;
    if (!upper && (!has_port || !port.empty()) &&
        name.size() + (has_port ? port.size() + 1 : 0) == host.size()) {
        out.name = name;
        out.authority = host;
        return out;
    }
    buf.clear();
    for (char c : name) {
        buf += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    if (!port.empty()) {
        buf += ':';
        buf += port;
    }
    out.authority = buf;
    out.name = out.authority.substr(0, name.size());
    return out;
}

// Hostile Hosts, drawn from the characters that decide (digits, dots, colons, letters of both
// cases, '-', '_', and bytes a name may not hold), as a bot probing the parser would send.
TEST(RequestHost, OnePassReadingAcceptsExactlyWhatTheFirstReadingDid) {
    std::mt19937_64 rng(18);
    using namespace std::string_view_literals;
    const std::string_view alphabets[] = {"0123456789....::aZz-_ /@%\x00\xc3\x7f[]"sv,
                                          "0123456789...:"sv};
    std::vector<std::string> hosts = {
        "127.0.0.1:8080", "255.255.255.255", "256.1.1.1", "1.2.3.4.", "1.2.3.4..", "1.2.3",
        "1.2.3.4.5", "a.1", "1.a", "0.0.0.0:0", "00.1.1.1", "shop.example.com:65535",
        "shop.example.com:65536", "shop.example.com:99999", "Shop.Example.COM.:443", "x:",
        std::string(253, 'a'), std::string(254, 'a'), std::string(253, 'a') + ".",
        std::string(252, 'a') + "..", "-", "_", "a-.b_", "1-2.3", "1.2.3.04"};
    for (int i = 0; i < 200000; ++i) {
        std::string h;
        const auto alphabet = alphabets[i % 2];
        const auto n = rng() % 18;
        for (std::uint64_t k = 0; k < n; ++k) {
            h += alphabet[rng() % alphabet.size()];
        }
        hosts.push_back(std::move(h));
    }
    for (const auto& h : hosts) {
        if (!h.empty() && h.front() == '[') {
            continue;  // bracketed IPv6: read by the same code as before
        }
        std::string buf_new;
        std::string buf_old;
        auto now = parse_host(h, buf_new);
        auto then = reference_parse_name_host(h, buf_old);
        ASSERT_EQ(now.valid, then.valid) << h;
        if (now.valid) {
            ASSERT_EQ(now.name, then.name) << h;
            ASSERT_EQ(now.authority, then.authority) << h;
        }
    }
}

TEST(RequestHost, Http11RequestWithoutHostIsRefused) {
    target_buffers buf;
    auto r = canonicalize_request("GET", "/", nullptr, true, buf);
    EXPECT_EQ(r.status, target_status::bad_request);
    auto old = canonicalize_request("GET", "/", nullptr, false, buf);
    EXPECT_EQ(old.status, target_status::ok);
    EXPECT_FALSE(old.host.valid);
}

TEST(RequestHost, AbsoluteFormAuthorityReplacesTheHostField) {
    target_buffers buf;
    std::string_view host = "other.test";
    auto r = canonicalize_request("GET", "http://Shop.Example.com./x", &host, true, buf);
    ASSERT_EQ(r.status, target_status::ok);
    EXPECT_EQ(r.host.name, "shop.example.com");
    EXPECT_EQ(r.target.path, "/x");
    std::string_view bad = "bad host";
    EXPECT_EQ(canonicalize_request("GET", "http://a.test/x", &bad, true, buf).status,
              target_status::bad_request);
    EXPECT_EQ(canonicalize_request("GET", "http://a..test/x", &host, true, buf).status,
              target_status::bad_request);
}

TEST(RequestHost, InvalidHostFieldIsRefusedAndEmptyHostToo) {
    target_buffers buf;
    std::string_view empty;
    EXPECT_EQ(canonicalize_request("GET", "/", &empty, true, buf).status,
              target_status::bad_request);
    std::string_view spaced = "a b";
    EXPECT_EQ(canonicalize_request("GET", "/", &spaced, false, buf).status,
              target_status::bad_request);
}

}  // namespace
}  // namespace waitroom::util
