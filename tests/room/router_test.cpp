// Routing a request to a room, and the bypass rules.

#include <gtest/gtest.h>

#include <map>

#include "room/harness.hpp"
#include "waitroom/room/router.hpp"
#include "waitroom/util/request_target.hpp"

namespace waitroom::room {
namespace {

using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;

class fake_headers final : public header_lookup {
  public:
    std::map<std::string, std::string> values;
    std::optional<std::string_view> find(std::string_view name) const override {
        for (const auto& [k, v] : values) {
            if (k.size() == name.size() &&
                std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
                    return std::tolower(static_cast<unsigned char>(a)) ==
                           std::tolower(static_cast<unsigned char>(b));
                })) {
                return std::string_view(v);
            }
        }
        return std::nullopt;
    }
};

std::vector<config::room> routed_rooms() {
    auto any_checkout = make_room("any-checkout", 10, 10);
    any_checkout.path = "/checkout";
    auto shop_checkout = make_room("shop-checkout", 10, 10);
    shop_checkout.host = "shop.example.com";
    shop_checkout.path = "/checkout";
    auto shop_root = make_room("shop-root", 10, 10);
    shop_root.host = "shop.example.com";
    shop_root.path = "/";
    auto pay = make_room("pay", 10, 10);
    pay.path = "/checkout/pay";
    pay.additional_routes.push_back({"api.example.com", "/cart"});
    return {any_checkout, shop_checkout, shop_root, pay};
}

// Routes a request as the gateway does: its target and Host read by canonicalize_request.
std::string routed(const engine& e, std::string_view host, std::string_view target) {
    util::target_buffers buf;
    auto c = util::canonicalize_request("GET", target, &host, true, buf);
    if (c.status != util::target_status::ok) {
        return "refused";
    }
    request_view req;
    req.host = c.host.name;
    req.path = c.target.match_path;
    req.path_to_first_param = util::path_to_first_param(c.target.path);
    auto r = e.route(req);
    if (r.what == route_action::misdirected) {
        return "misdirected";
    }
    if (r.what == route_action::pass) {
        return r.reason == pass_reason::bypassed ? "bypassed:" + r.room->id() : "unmatched";
    }
    return r.room->id();
}

TEST(Router, LongestPathPrefixWins) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "other.example.com", "/checkout/pay/now"), "pay");
    EXPECT_EQ(routed(h.engine(), "shop.example.com", "/checkout/pay"), "pay");
}

TEST(Router, ExactHostBeatsAnyHostForTheSamePath) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "shop.example.com", "/checkout/basket"), "shop-checkout");
    EXPECT_EQ(routed(h.engine(), "other.example.com", "/checkout/basket"), "any-checkout");
}

TEST(Router, HostIgnoresPortAndLetterCase) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "Shop.Example.COM:8443", "/checkout"), "shop-checkout");
}

TEST(Router, PathPrefixMatchesWholeSegmentsAndIgnoresTheQuery) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "x.example.com", "/checkout?step=2"), "any-checkout");
    EXPECT_EQ(routed(h.engine(), "shop.example.com", "/checkouts"), "shop-root");
    EXPECT_EQ(routed(h.engine(), "api.example.com", "/checkouts"), "unmatched");
    EXPECT_EQ(routed(h.engine(), "shop.example.com", "/anything"), "shop-root");
}

TEST(Router, VariantFormsOfAPathRouteLikeThePlainForm) {
    harness h(routed_rooms());
    for (auto target : {"//checkout/x", "/./checkout/x", "/x/../checkout/x", "/%63heckout/x",
                        "/%2e/checkout/x", "/checkout;a/x", "/checkout/x;b", "/a/..;/checkout",
                        "http://x.example.com//checkout/x"}) {
        EXPECT_EQ(routed(h.engine(), "x.example.com", target), "any-checkout") << target;
    }
    EXPECT_EQ(routed(h.engine(), "x.example.com", "checkout/x"), "refused");
    EXPECT_EQ(routed(h.engine(), "x.example.com", "/%2fcheckout"), "refused");
    EXPECT_EQ(routed(h.engine(), "x.example.com", "/../checkout"), "refused");
}

TEST(Router, HostOfAnAbsoluteFormTargetWinsOverTheHostField) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "other.test", "http://Shop.Example.com./checkout"),
              "shop-checkout");
}

TEST(Router, PathsMatchIgnoringCaseOnlyInARoomThatAsksForIt) {
    auto iis = make_room("iis", 10, 10);
    iis.path = "/Shop";
    iis.case_insensitive_paths = true;
    auto plain = make_room("plain", 10, 10);
    plain.path = "/cart";
    harness h({iis, plain});
    EXPECT_EQ(routed(h.engine(), "h", "/SHOP/x"), "iis");
    EXPECT_EQ(routed(h.engine(), "h", "/shop"), "iis");
    EXPECT_EQ(routed(h.engine(), "h", "/%73HoP/x"), "iis");
    EXPECT_EQ(routed(h.engine(), "h", "/shopping"), "unmatched");
    EXPECT_EQ(routed(h.engine(), "h", "/cart"), "plain");
    EXPECT_EQ(routed(h.engine(), "h", "/Cart"), "unmatched");
}

TEST(Router, AdditionalRoutesLeadToTheirRoom) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "api.example.com", "/cart/items"), "pay");
    EXPECT_EQ(routed(h.engine(), "www.example.com", "/other"), "misdirected");
}

TEST(Router, UnknownHostIsMisdirectedWhenRoomsNameHosts) {
    harness h(routed_rooms());
    EXPECT_EQ(routed(h.engine(), "127.0.0.1", "/"), "misdirected");
    EXPECT_EQ(routed(h.engine(), "shop.example.com.evil", "/"), "misdirected");
    // A route for any host still takes its paths, whatever the host.
    EXPECT_EQ(routed(h.engine(), "127.0.0.1", "/checkout"), "any-checkout");
    // A named host with no matching path is known: it passes.
    EXPECT_EQ(routed(h.engine(), "api.example.com", "/other"), "unmatched");
}

TEST(Router, UnknownHostPassesWhenTheOperatorOptsOut) {
    harness h(routed_rooms());
    auto cfg = std::make_shared<config::config>(h.engine().config());
    cfg->origin.unknown_hosts = config::unknown_hosts_policy::pass;
    h.set_config(cfg);
    EXPECT_EQ(routed(h.engine(), "127.0.0.1", "/"), "unmatched");
}

TEST(Router, UnknownHostPassesWhenNoRoomNamesAHost) {
    auto any = make_room("any", 10, 10);
    any.path = "/shop";
    harness h({any});
    EXPECT_EQ(routed(h.engine(), "127.0.0.1", "/"), "unmatched");
}

TEST(Router, UnmatchedRequestPassesUntouchedAndUncounted) {
    auto any = make_room("any", 10, 10);
    any.path = "/checkout";
    harness h({any});
    request_view req;
    req.host = "nowhere.example.com";
    req.path = "/";
    cookie::payload* none = nullptr;
    auto d = h.engine().decide(req, h.worker(), none, h.now(), h.rng());
    EXPECT_EQ(d.what, action::pass);
    EXPECT_EQ(d.reason, pass_reason::unmatched);
    EXPECT_FALSE(d.cookie_changed);
}

config::bypass_rule rule(config::bypass_rule::kind k, std::string value) {
    config::bypass_rule r;
    r.type = k;
    r.value = std::move(value);
    return r;
}

std::vector<config::room> bypass_room() {
    using kind = config::bypass_rule::kind;
    auto r = make_room("shop", 1, 1);
    r.bypass.push_back(rule(kind::path_prefix, "/static/"));
    auto hc = rule(kind::header, "X-Health-Check");
    hc.header_value = "hc-0123456789abcdef";
    r.bypass.push_back(hc);
    auto eq = rule(kind::header, "X-Api-Key");
    eq.header_value = "secret-secret-secret";
    r.bypass.push_back(eq);
    auto again = rule(kind::header, "x-api-key");  // a second secret for the same field
    again.header_value = "rotated-secret-0002";
    r.bypass.push_back(again);
    auto cidr = rule(kind::ip, "10.0.0.0/8");
    cidr.net = *parse_ip("10.0.0.0");
    cidr.prefix_len = 96 + 8;
    r.bypass.push_back(cidr);
    r.bypass.push_back(rule(kind::method, "OPTIONS"));
    return {r};
}

TEST(Bypass, PathPrefixBypasses) {
    harness h(bypass_room());
    EXPECT_EQ(routed(h.engine(), "h", "/static/app.js"), "bypassed:shop");
    EXPECT_EQ(routed(h.engine(), "h", "/staticx"), "shop");
}

TEST(Bypass, PathPrefixMatchesWholeCanonicalSegments) {
    using kind = config::bypass_rule::kind;
    auto r = make_room("shop", 1, 1);
    r.bypass.push_back(rule(kind::path_prefix, "/static"));
    harness h({r});
    EXPECT_EQ(routed(h.engine(), "h", "/static"), "bypassed:shop");
    EXPECT_EQ(routed(h.engine(), "h", "/static/app.js"), "bypassed:shop");
    EXPECT_EQ(routed(h.engine(), "h", "/static;v=2/app.js"), "bypassed:shop");
    EXPECT_EQ(routed(h.engine(), "h", "/staticfoo"), "shop");
    EXPECT_EQ(routed(h.engine(), "h", "/static/../shop/x"), "shop");
    EXPECT_EQ(routed(h.engine(), "h", "/static/..;/shop/x"), "shop");
    EXPECT_EQ(routed(h.engine(), "h", "/static/%2e%2e/shop/x"), "shop");
    EXPECT_EQ(routed(h.engine(), "h", "/Static/x"), "shop");
}

TEST(Bypass, PathPrefixHoldsWhetherTheOriginStripsSegmentParametersOrEndsThePathAtTheFirst) {
    using kind = config::bypass_rule::kind;
    auto r = make_room("shop", 1, 1);
    r.bypass.push_back(rule(kind::path_prefix, "/shop/static"));
    harness h({r});
    EXPECT_EQ(routed(h.engine(), "h", "/shop/static;v=2/app.js"), "bypassed:shop");
    EXPECT_EQ(routed(h.engine(), "h", "/shop/static/app.js;jsessionid=1"), "bypassed:shop");
    // Stripped per segment these are /shop/static/..., but ended at the first ';' they are
    // /shop or /: an origin that reads them so would serve the room's own pages.
    EXPECT_EQ(routed(h.engine(), "h", "/shop;/static"), "shop");
    EXPECT_EQ(routed(h.engine(), "h", "/shop;x/static/app.js"), "shop");
    // An empty segment with parameters is dropped from the canonical path: the origin is sent
    // /shop/static/app.js, which is the bypass.
    EXPECT_EQ(routed(h.engine(), "h", "/;a/shop/static/app.js"), "bypassed:shop");
}

TEST(Bypass, HeaderBypassesOnlyWithItsExactSecret) {
    harness h(bypass_room());
    fake_headers hs;
    request_view req;
    req.host = "h";
    req.path = "/";
    req.headers = &hs;
    EXPECT_EQ(h.engine().route(req).what, route_action::decide);
    // Being present is not enough any more, nor is an empty, short, long or near value.
    for (const char* guess :
         {"", "1", "hc-0123456789abcde", "hc-0123456789abcdeF", "hc-0123456789abcdef0",
          "HC-0123456789ABCDEF", "secret-secret-secret"}) {
        hs.values["x-health-check"] = guess;
        EXPECT_EQ(h.engine().route(req).what, route_action::decide) << guess;
    }
    hs.values["x-health-check"] = "hc-0123456789abcdef";
    EXPECT_EQ(h.engine().route(req).reason, pass_reason::bypassed);
    hs.values.clear();
    hs.values["X-Api-Key"] = "rotated-secret-0002";
    EXPECT_EQ(h.engine().route(req).reason, pass_reason::bypassed);
}

TEST(Bypass, NamesEveryHeaderRuleFieldOnceForRemoval) {
    bypass_matcher m(bypass_room()[0].bypass);
    EXPECT_EQ(m.secret_fields(), (std::vector<std::string>{"X-Health-Check", "X-Api-Key"}));
    EXPECT_TRUE(bypass_matcher({}).secret_fields().empty());
}

TEST(ConstantTimeEqual, IsEqualityOfBytes) {
    EXPECT_TRUE(constant_time_equal("0123456789abcdef", "0123456789abcdef"));
    EXPECT_FALSE(constant_time_equal("0123456789abcdef", "0123456789abcdeF"));
    EXPECT_FALSE(constant_time_equal("0123456789abcdef", "0123456789abcde"));
    EXPECT_FALSE(
        constant_time_equal("0123456789abcdef", std::string_view("0123456789abcdef\0", 17)));
    EXPECT_FALSE(constant_time_equal("0123456789abcdef", ""));
    EXPECT_FALSE(constant_time_equal("abc", std::string_view("ab\0", 3)));
    EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(Bypass, ClientIpInsideTheCidrBypasses) {
    harness h(bypass_room());
    request_view req;
    req.host = "h";
    req.path = "/";
    req.has_client_ip = true;
    req.client_ip = *parse_ip("10.20.30.40");
    EXPECT_EQ(h.engine().route(req).reason, pass_reason::bypassed);
    req.client_ip = *parse_ip("11.0.0.1");
    EXPECT_EQ(h.engine().route(req).what, route_action::decide);
    req.client_ip = *parse_ip("2001:db8::1");
    EXPECT_EQ(h.engine().route(req).what, route_action::decide);
}

TEST(Bypass, MethodBypasses) {
    harness h(bypass_room());
    request_view req;
    req.host = "h";
    req.path = "/";
    req.method = "options";
    EXPECT_EQ(h.engine().route(req).reason, pass_reason::bypassed);
    req.method = "GET";
    EXPECT_EQ(h.engine().route(req).what, route_action::decide);
}

TEST(Bypass, BypassedTrafficIsNotCounted) {
    harness h(bypass_room());  // one active user at most
    request_view req;
    req.host = "h";
    req.path = "/static/a.css";
    for (int i = 0; i < 5; ++i) {
        auto d = h.engine().decide(req, h.worker(), nullptr, h.now(), h.rng());
        EXPECT_EQ(d.what, action::pass);
        EXPECT_FALSE(d.cookie_changed);
    }
    h.sync();
    EXPECT_EQ(h.state("shop").counts().active, 0);
    visitor v;
    EXPECT_EQ(h.visit(v).what, action::admit);  // the only place is still free
}

TEST(Router, ParsesIpv4AsMappedIpv6) {
    auto a = parse_ip("192.0.2.1");
    ASSERT_TRUE(a);
    EXPECT_EQ((*a)[10], 0xff);
    EXPECT_EQ((*a)[12], 192);
    EXPECT_FALSE(parse_ip("not-an-ip"));
}

}  // namespace
}  // namespace waitroom::room
