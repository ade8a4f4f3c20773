// Routing as a whole process: a room held full by one admitted visitor, then every other way of
// writing its path or its host, sent as raw bytes by a visitor with no cookie. None may reach
// the origin; the plain form of each bypass rule still does. Hosts: 400 for a missing or
// invalid Host, 421 for a host no room names (unless the operator opts out).

#include <string>
#include <vector>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

std::string routing_config(const std::string& origin_url, const std::string& origin_extra,
                           const std::string& rooms) {
    return "listen: [\"127.0.0.1:0\"]\n"
           "origin: {url: \"" +
           origin_url + "\", connect_timeout: 2s, timeout: 2s" + origin_extra +
           "}\n"
           "admin: {listen: \"\"}\n"
           "threads: 2\n"
           "state: {backend: local, sync_interval: 50ms}\n"
           "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
           "logging: {level: info}\n"
           "rooms:\n" +
           rooms;
}

// Rooms on paths, for any host: /shop (full after one visitor) with a bypass below it, a
// case-insensitive /Admin room, and a large room on / whose bypass is /static.
constexpr const char* path_rooms =
    "  - {name: Shop, path: /shop, total_active_users: 1, new_users_per_minute: 100,\n"
    "     session_duration: 5m, bypass: [{path_prefix: /shop/static},\n"
    "     {header: X-Health-Check, value: \"health-secret-0123456789\"}]}\n"
    "  - {name: Admin, path: /Admin, case_insensitive_paths: true, total_active_users: 1,\n"
    "     new_users_per_minute: 100, session_duration: 5m}\n"
    "  - {name: Site, path: /, total_active_users: 1000, new_users_per_minute: 1000,\n"
    "     bypass: [{path_prefix: /static}]}\n";

// One room for one host, full after one visitor.
constexpr const char* host_rooms =
    "  - {name: Hosted, host: shop.example.com, path: /, total_active_users: 1,\n"
    "     new_users_per_minute: 100, session_duration: 5m}\n";

// Sends `head` (request line and fields, without the blank line) on a fresh connection.
http_response raw(std::uint16_t port, const std::string& head) {
    client_connection c(port);
    if (!c.write_raw(head + "\r\n")) {
        return {};
    }
    return c.read_response(head.starts_with("HEAD "));
}

std::string get(std::string_view target, std::string_view host = "127.0.0.1") {
    return "GET " + std::string(target) + " HTTP/1.1\r\nHost: " + std::string(host) + "\r\n";
}

class Routing : public daemon_test {
  protected:
    // Takes the only place of the room `target` routes to, and checks it reached the origin.
    void fill(const std::string& head) {
        std::size_t before = origin_.requests();
        auto r = raw(port_, head);
        ASSERT_NE(r.status, 0u) << r.error;
        ASSERT_EQ(origin_.requests(), before + 1) << "the first visitor did not get in";
        ASSERT_NE(r.headers.count(http::field::set_cookie), 0u);
    }

    // The request does not reach the origin, and is answered with `status`.
    void held(const std::string& head, unsigned status) {
        std::size_t before = origin_.requests();
        auto r = raw(port_, head);
        EXPECT_EQ(r.status, status) << head << "\n" << describe(r);
        if (status == 200) {
            EXPECT_TRUE(is_queue_page(r)) << head << "\n" << describe(r);
        }
        EXPECT_EQ(origin_.requests(), before) << head << " reached the origin";
    }

    // The request reaches the origin as `expected_target`, without a room cookie.
    void passes(const std::string& head, const std::string& expected_target) {
        std::size_t before = origin_.requests();
        auto r = raw(port_, head);
        EXPECT_NE(r.status, 0u) << head << " " << r.error;
        EXPECT_EQ(origin_.requests(), before + 1) << head << " did not reach the origin";
        EXPECT_EQ(origin_.last_request().target, expected_target) << head;
        EXPECT_EQ(r.headers.count(http::field::set_cookie), 0u) << head;
    }
};

TEST_F(Routing, NoVariantFormOfAFullRoomsPathReachesTheOrigin) {
    start(routing_config(origin_.url(), "", path_rooms));
    fill(get("/shop/x"));
    fill(get("/Admin/x"));
    // The queue page for every form that reads as the room's path, 400 for what cannot be
    // read as a path at all.
    const std::vector<std::pair<std::string, unsigned>> forms = {
        {"/shop/x", 200},
        {"/shop", 200},
        {"/shop/", 200},
        {"//shop/x", 200},
        {"/./shop/x", 200},
        {"/x/../shop/x", 200},
        {"/%73hop/x", 200},
        {"/%2e/shop/x", 200},
        {"/shop;a/x", 200},
        {"/shop;jsessionid=1", 200},
        {"/;a/shop/x", 200},
        {"/static/../shop/x", 200},
        {"/static/..;/shop/x", 200},
        {"/static/%2e%2e/shop/x", 200},
        {"/shop/static/../x", 200},
        {"/shop/static;v=1/../x", 200},
        {"/shop/./static/../x", 200},
        {"/shop;/static", 200},  // the bypass's prefix only with ';' stripped per segment
        {"/shop;a/static/app.css", 200},
        {"http://a.test//shop/x", 200},
        {"HTTP://a.test/%73hop", 200},
        {"/shop/x?a=%2e%2e", 200},
        {"/admin/x", 200},
        {"/ADMIN", 200},
        {"/%61dmin/x", 200},
        {"/aDmIn;x/y", 200},
        {"/%2E%2E/shop/x", 400},
        {"/..;/shop/x", 400},
        {"/../shop/x", 400},
        {"/%2fshop/x", 400},
        {"/shop%2fx", 400},
        {"/shop%5cx", 400},
        {"/shop\\x", 400},
        {"/shop%00", 400},
        {"shop/x", 400},
        {"*", 400},
        {"/shop/x#top", 400},
        {"http://user@a.test/shop", 400},
        {"ftp://a.test/shop", 400},
    };
    for (const auto& [target, status] : forms) {
        held(get(target), status);
    }
    held("CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1\r\n", 405);
}

TEST_F(Routing, PlainFormOfEveryBypassRuleStillBypasses) {
    start(routing_config(origin_.url(), "", path_rooms));
    fill(get("/shop/x"));
    passes(get("/shop/static/app.css?v=1"), "/shop/static/app.css?v=1");
    passes(get("/shop/static"), "/shop/static");
    passes(
        "GET /shop/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Health-Check: health-secret-0123456789\r\n",
        "/shop/x");
    passes(get("/static/logo.png"), "/static/logo.png");
    // Not the bypass: its prefix matches whole segments.
    held(get("/shop/staticx"), 200);
}

TEST_F(Routing, ABypassSecretReachesTheOriginOnNoRouteAtAll) {
    start(routing_config(origin_.url(), "", path_rooms));
    // The secret is Shop's; requests that go to Site (or bypass it) carry it too.
    for (const char* target : {"/shop/x", "/elsewhere", "/static/a.css"}) {
        for (const char* field : {"X-Health-Check", "x-health-check", "X_Health_Check"}) {
            auto r = raw(port_, "GET " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                    field + ": health-secret-0123456789\r\n");
            ASSERT_NE(r.status, 0u) << target << " " << describe(r);
            ASSERT_EQ(origin_.last_request().target, target);
            EXPECT_EQ(origin_.last_request().count("X-Health-Check"), 0u)
                << target << " " << field;
            EXPECT_EQ(origin_.last_request().count("X_Health_Check"), 0u)
                << target << " " << field;
        }
    }
}

TEST_F(Routing, OriginReceivesTheCanonicalFormTheRoomSaw) {
    start(routing_config(origin_.url(), "", path_rooms));
    auto r = raw(port_, get("/%68ello/./a;b//c/..?q=%7e&x=/../"));
    EXPECT_NE(r.status, 0u);
    EXPECT_EQ(origin_.last_request().target, "/hello/a;b/?q=%7e&x=/../");
    raw(port_, get("http://Other.Test./%68ello", "shop.test"));
    EXPECT_EQ(origin_.last_request().target, "/hello");
    EXPECT_EQ(origin_.last_request().header("Host"), "other.test");
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-Host"), "other.test");
    raw(port_, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    EXPECT_EQ(origin_.last_request().target, "*");
}

TEST_F(Routing, NoHostTrickReachesAFullHostRoom) {
    start(routing_config(origin_.url(), "", host_rooms));
    fill(get("/x", "shop.example.com"));
    held(get("/x", "shop.example.com"), 200);
    held(get("/x", "SHOP.Example.COM"), 200);
    held(get("/x", "shop.example.com."), 200);
    held(get("/x", "shop.example.com:8080"), 200);
    held(get("http://shop.example.com/x", "other.test"), 200);  // the authority wins
    held(get("http://SHOP.example.com.:80//x", "127.0.0.1"), 200);
    held(get("/x", "127.0.0.1"), 421);
    held(get("/x", "other.test"), 421);
    held(get("http://other.test/x", "shop.example.com"), 421);
    held(get("/x", "shop.example.com.evil"), 421);
    held("GET /x HTTP/1.0\r\n", 421);  // no Host at all: no room's host
    held("GET /x HTTP/1.1\r\n", 400);  // HTTP/1.1 needs one
    held(get("/x", ""), 400);
    held(get("/x", "shop.example.com@evil.test"), 400);
    held(get("/x", "shop..example.com"), 400);
    held(get("/x", "shop.example.com:99999"), 400);
    held(get("/x", "[::1"), 400);
    held("GET /x HTTP/1.1\r\nHost: shop.example.com\r\nHost: other.test\r\n", 400);
    held(get("http://user@shop.example.com/x", "shop.example.com"), 400);
}

TEST_F(Routing, UnknownHostPassesWhenTheOperatorOptsOut) {
    start(routing_config(origin_.url(), ", unknown_hosts: pass", host_rooms));
    fill(get("/x", "shop.example.com"));
    passes(get("/x", "127.0.0.1:8080"), "/x");
    // The origin can tell it apart: it receives the visitor's Host (host_header: client).
    EXPECT_EQ(origin_.last_request().header("Host"), "127.0.0.1:8080");
    held(get("/x", "Shop.Example.com"), 200);
}

TEST_F(Routing, HostHeaderOriginSendsTheOriginsHost) {
    start(routing_config(origin_.url(), ", host_header: origin", host_rooms));
    fill(get("/x", "Shop.Example.com.:8443"));
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.header("Host"), "127.0.0.1:" + std::to_string(origin_.port()));
    EXPECT_EQ(seen.header("X-Forwarded-Host"), "shop.example.com:8443");
}

TEST_F(Routing, HostHeaderClientSendsTheVisitorsCanonicalHost) {
    start(routing_config(origin_.url(), "", host_rooms));
    fill(get("/x", "Shop.Example.com.:8443"));
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.header("Host"), "shop.example.com:8443");
    EXPECT_EQ(seen.header("X-Forwarded-Host"), "shop.example.com:8443");
}

}  // namespace
}  // namespace waitroom::test
