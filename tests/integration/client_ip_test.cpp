// Bypass rules that cannot be forged, through the real daemon and origin: the client IP behind
// trusted proxies and the PROXY protocol, forwarded headers overwritten for untrusted peers,
// and header bypass secrets (stripped before the origin).
#include <gtest/gtest.h>

#include <string>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view secret = "0123456789abcdef-ok";

// Two rooms behind one listener: /shop queues everyone but the bypass rules; /open admits.
std::string rooms_config(const std::string& origin_url, const std::string& listen,
                         const std::string& extra = "") {
    return "admin: {listen: \"\"}\n"
           "listen: [" +
           listen +
           "]\n"
           "origin: {url: \"" +
           origin_url +
           "\", connect_timeout: 2s, timeout: 2s}\n"
           "threads: 2\n"
           "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n" +
           extra +
           "rooms:\n"
           "  - name: Shop\n"
           "    path: /shop\n"
           "    total_active_users: 1\n"
           "    new_users_per_minute: 1\n"
           "    queue_all: true\n"
           "    bypass:\n"
           "      - {ip: 198.51.100.7}\n"
           "      - {header: X-Bypass, value: \"" +
           std::string(secret) +
           "\"}\n"
           "  - name: Open\n"
           "    path: /open\n"
           "    total_active_users: 1000\n"
           "    new_users_per_minute: 1000\n"
           "    bypass:\n"
           "      - {header: X-Open-Key, value: \"open-key-0123456789\"}\n";
}

http::request<http::string_body> get(
    std::string_view target,
    std::initializer_list<std::pair<const char*, const char*>> fields = {}) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "shop.test");
    for (const auto& [name, value] : fields) {
        req.insert(name, value);
    }
    return req;
}

class ClientIp : public daemon_test {
  protected:
    // Sends `req` on a fresh connection; true when it reached the origin (which then holds it
    // as its last request).
    bool reached_origin(http::request<http::string_body> req, http_response* out = nullptr) {
        const auto before = origin_.requests();
        client_connection c(port_);
        auto r = c.request(std::move(req));
        if (out != nullptr) {
            *out = r;
        }
        EXPECT_NE(r.status, 0u) << r.error;
        return origin_.requests() > before;
    }
};

TEST_F(ClientIp, AnUntrustedPeerCannotForgeItsAddressAndItsForwardedHeadersAreOverwritten) {
    start(rooms_config(origin_.url(), "\"127.0.0.1:0\""));
    http_response r;
    EXPECT_FALSE(reached_origin(get("/shop/x", {{"X-Forwarded-For", "198.51.100.7"}}), &r));
    EXPECT_TRUE(is_queue_page(r)) << describe(r);
    EXPECT_FALSE(reached_origin(
        get("/shop/x", {{"X-Real-IP", "198.51.100.7"}, {"Forwarded", "for=198.51.100.7"}})));

    ASSERT_TRUE(reached_origin(get("/hello", {{"X-Forwarded-For", "198.51.100.7, 10.0.0.1"},
                                              {"x-forwarded-for", "10.0.0.2"},
                                              {"X-Real-IP", "198.51.100.7"},
                                              {"Forwarded", "for=198.51.100.7;proto=https"},
                                              {"X-Forwarded-Proto", "https"}}),
                               &r));
    EXPECT_TRUE(from_origin(r)) << describe(r);
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.count("X-Forwarded-For"), 1u);
    EXPECT_EQ(seen.header("X-Forwarded-For"), "127.0.0.1");
    EXPECT_EQ(seen.count("X-Real-IP"), 1u);
    EXPECT_EQ(seen.header("X-Real-IP"), "127.0.0.1");
    EXPECT_EQ(seen.count("Forwarded"), 1u);
    EXPECT_EQ(seen.header("Forwarded"), "for=127.0.0.1;proto=http");
    EXPECT_EQ(seen.header("X-Forwarded-Proto"), "http");

    // A visitor's claim of https does not make the cookie Secure either.
    auto q = client_connection(port_).request(get("/shop/x", {{"X-Forwarded-Proto", "https"}}));
    ASSERT_TRUE(is_queue_page(q)) << describe(q);
    EXPECT_EQ(std::string(q.headers[http::field::set_cookie]).find("Secure"), std::string::npos)
        << q.headers[http::field::set_cookie];
}

TEST_F(ClientIp, AppendModeKeepsTheClientsChainButTrustsNothingInIt) {
    start(rooms_config(origin_.url(), "\"127.0.0.1:0\"", "forwarded_headers: append\n"));
    EXPECT_FALSE(reached_origin(get("/shop/x", {{"X-Forwarded-For", "198.51.100.7"}})));
    ASSERT_TRUE(reached_origin(
        get("/hello", {{"X-Forwarded-For", "198.51.100.7"}, {"X-Real-IP", "198.51.100.7"}})));
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.header("X-Forwarded-For"), "198.51.100.7, 127.0.0.1");
    EXPECT_EQ(seen.header("X-Real-IP"), "198.51.100.7");
}

TEST_F(ClientIp, ATrustedProxyNamesTheClientAndItsScheme) {
    start(rooms_config(origin_.url(), "\"127.0.0.1:0\"",
                       "trusted_proxies: [127.0.0.1, 10.0.0.0/8]\n"));
    // The rightmost untrusted address is the client: here the bypassed one.
    ASSERT_TRUE(reached_origin(get("/shop/x", {{"X-Forwarded-For", "1.1.1.1, 198.51.100.7"},
                                               {"X-Forwarded-For", "10.0.0.9"}})));
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.target, "/shop/x");
    EXPECT_EQ(seen.header("X-Forwarded-For"), "1.1.1.1, 198.51.100.7, 10.0.0.9, 127.0.0.1");
    // A forged address left of a real client moves nothing.
    http_response r;
    EXPECT_FALSE(
        reached_origin(get("/shop/x", {{"X-Forwarded-For", "198.51.100.7, 203.0.113.5"}}), &r));
    EXPECT_TRUE(is_queue_page(r)) << describe(r);
    // Junk stops the walk at the last trusted hop, never the address behind the junk.
    EXPECT_FALSE(reached_origin(get("/shop/x", {{"X-Forwarded-For", "198.51.100.7, junk"}})));
    // No X-Forwarded-For: the proxy itself is the client.
    EXPECT_FALSE(reached_origin(get("/shop/x")));

    // Its X-Forwarded-Proto is believed: forwarded as such, and the cookie is Secure. An
    // X-Real-IP a visitor set through it names the client the proxy vouched for instead.
    ASSERT_TRUE(reached_origin(get("/hello", {{"X-Forwarded-For", "198.51.100.7"},
                                              {"X-Forwarded-Proto", "https"},
                                              {"X-Real-IP", "203.0.113.66"},
                                              {"Forwarded", "for=\"[2001:db8::66]\""}})));
    seen = origin_.last_request();
    EXPECT_EQ(seen.header("X-Forwarded-Proto"), "https");
    EXPECT_EQ(seen.header("X-Real-IP"), "198.51.100.7");
    EXPECT_EQ(seen.header("Forwarded"), "for=198.51.100.7;proto=https");
    auto q = client_connection(port_).request(get("/shop/x", {{"X-Forwarded-Proto", "https"}}));
    ASSERT_TRUE(is_queue_page(q)) << describe(q);
    EXPECT_NE(std::string(q.headers[http::field::set_cookie]).find("; Secure"), std::string::npos)
        << q.headers[http::field::set_cookie];
}

TEST_F(ClientIp, AHeaderSecretBypassesAndNeverReachesTheOrigin) {
    start(rooms_config(origin_.url(), "\"127.0.0.1:0\""));
    const std::string right(secret);
    ASSERT_TRUE(reached_origin(get("/shop/x", {{"x-bypass", right.c_str()}})));
    EXPECT_EQ(origin_.last_request().count("X-Bypass"), 0u);

    const std::string near = right.substr(0, right.size() - 1) + "K";
    for (const std::string& guess :
         {std::string(), std::string("1"), right.substr(0, right.size() - 1), near, right + "x",
          std::string("open-key-0123456789")}) {
        http_response r;
        EXPECT_FALSE(reached_origin(get("/shop/x", {{"X-Bypass", guess.c_str()}}), &r)) << guess;
        EXPECT_TRUE(is_queue_page(r)) << guess << ": " << describe(r);
    }
    // The first X-Bypass decides: a right one behind a wrong one does not bypass.
    EXPECT_FALSE(
        reached_origin(get("/shop/x", {{"X-Bypass", "wrong"}, {"X-Bypass", right.c_str()}})));
    // Nor does the secret inside a list, under the underscore spelling, or in another case.
    const std::string listed = "x, " + right;
    const std::string upper = "0123456789ABCDEF-OK";
    EXPECT_FALSE(reached_origin(get("/shop/x", {{"X-Bypass", listed.c_str()}})));
    EXPECT_FALSE(reached_origin(get("/shop/x", {{"X_Bypass", right.c_str()}})));
    EXPECT_FALSE(reached_origin(get("/shop/x", {{"X-Bypass", upper.c_str()}})));
    // The field's name in any case, spaces around its value (not part of it): the secret.
    const std::string spaced = "  " + right + "\t ";
    ASSERT_TRUE(reached_origin(get("/shop/x", {{"X-BYPASS", spaced.c_str()}})));
    EXPECT_EQ(origin_.last_request().count("X-Bypass"), 0u);

    // Admitted without the secret: every X-Open-Key is removed all the same.
    http_response r;
    ASSERT_TRUE(reached_origin(get("/open/x", {{"X-Open-Key", "a-guess"},
                                               {"x-open-key", "another"},
                                               {"X_Open_Key", "a-third"},
                                               {"X-Keep", "1"}}),
                               &r));
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.count("X-Open-Key"), 0u);
    EXPECT_EQ(seen.count("X_Open_Key"), 0u);
    EXPECT_EQ(seen.header("X-Keep"), "1");
    EXPECT_NE(std::string(r.headers[http::field::set_cookie]), "");  // admitted, counted
    // Outside the rooms too: a secret of the gateway's is never the origin's to see.
    ASSERT_TRUE(reached_origin(get("/hello", {{"X-Open-Key", "a-guess"}, {"X-Keep", "2"}})));
    EXPECT_EQ(origin_.last_request().count("X-Open-Key"), 0u);
    EXPECT_EQ(origin_.last_request().header("X-Keep"), "2");
}

// ---- PROXY protocol ------------------------------------------------------------------------

std::string v2_ipv4(std::initializer_list<int> src, unsigned char command = 0x21) {
    std::string h("\r\n\r\n\0\r\nQUIT\n", 12);
    h += static_cast<char>(command);
    h += static_cast<char>(0x11);
    h += '\0';
    h += static_cast<char>(12);
    for (int b : src) {
        h += static_cast<char>(b);
    }
    for (int b : {127, 0, 0, 1, 0x13, 0x88, 0x1f, 0x90}) {
        h += static_cast<char>(b);
    }
    return h;
}

constexpr std::string_view plain_request =
    "GET /shop/x HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n";

class ProxyProtocol : public ClientIp {
  protected:
    // Sends `bytes` then reads a response; true when the origin saw a request.
    bool sent_reaches_origin(const std::string& bytes, http_response* out = nullptr) {
        const auto before = origin_.requests();
        client_connection c(port_);
        EXPECT_TRUE(c.write_raw(bytes));
        auto r = c.read_response();
        if (out != nullptr) {
            *out = r;
        }
        return origin_.requests() > before;
    }
};

TEST_F(ProxyProtocol, TheAddressOfAV1OrV2HeaderIsThePeer) {
    start(rooms_config(origin_.url(), "{address: \"127.0.0.1:0\", proxy_protocol: true}"));
    ASSERT_TRUE(sent_reaches_origin("PROXY TCP4 198.51.100.7 127.0.0.1 40000 80\r\n" +
                                    std::string(plain_request)));
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-For"), "198.51.100.7");
    http_response r;
    EXPECT_FALSE(sent_reaches_origin(
        "PROXY TCP4 198.51.100.8 127.0.0.1 40000 80\r\n" + std::string(plain_request), &r));
    EXPECT_TRUE(is_queue_page(r)) << describe(r);

    ASSERT_TRUE(sent_reaches_origin(v2_ipv4({198, 51, 100, 7}) + std::string(plain_request)));
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-For"), "198.51.100.7");
    EXPECT_FALSE(sent_reaches_origin(v2_ipv4({198, 51, 100, 9}) + std::string(plain_request)));

    // LOCAL and UNKNOWN keep the socket's peer.
    EXPECT_FALSE(
        sent_reaches_origin(v2_ipv4({198, 51, 100, 7}, 0x20) + std::string(plain_request)));
    ASSERT_TRUE(sent_reaches_origin(
        "PROXY UNKNOWN\r\nGET /hello HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n"));
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-For"), "127.0.0.1");
}

TEST_F(ProxyProtocol, AHeaderSentInPiecesIsReadWhole) {
    start(rooms_config(origin_.url(), "{address: \"127.0.0.1:0\", proxy_protocol: true}"));
    for (const std::string& head :
         {v2_ipv4({198, 51, 100, 7}), std::string("PROXY TCP4 198.51.100.7 127.0.0.1 1 2\r\n")}) {
        const auto before = origin_.requests();
        client_connection c(port_);
        // One send per byte of the header (the parser is fed every prefix in the unit tests).
        for (char b : head) {
            ASSERT_TRUE(c.write_raw(std::string_view(&b, 1)));
        }
        ASSERT_TRUE(c.write_raw(plain_request));
        auto r = c.read_response();
        EXPECT_NE(r.status, 0u) << r.error;
        ASSERT_GT(origin_.requests(), before);
        EXPECT_EQ(origin_.last_request().header("X-Forwarded-For"), "198.51.100.7");
    }
}

TEST_F(ProxyProtocol, AMissingOrMalformedHeaderClosesTheConnection) {
    start(rooms_config(origin_.url(), "{address: \"127.0.0.1:0\", proxy_protocol: true}"));
    for (const std::string& bad : {
             std::string(plain_request),
             std::string("PROXY TCP4 198.51.100.7 127.0.0.1 40000\r\n") +
                 std::string(plain_request),
             std::string("PROXY TCP4 ") + std::string(200, '1'),
             v2_ipv4({198, 51, 100, 7}, 0x23) + std::string(plain_request),
         }) {
        const auto before = origin_.requests();
        client_connection c(port_);
        ASSERT_TRUE(c.write_raw(bad));
        EXPECT_EQ(c.read_until_close(3s), "") << bad;
        EXPECT_EQ(origin_.requests(), before);
    }
    // A peer that sends nothing is let go after header_timeout.
    client_connection idle(port_);
    EXPECT_TRUE(idle.closed_by_peer(3s));
}

TEST_F(ProxyProtocol, TrustedProxiesApplyOnTopOfTheHeader) {
    start(rooms_config(origin_.url(), "{address: \"127.0.0.1:0\", proxy_protocol: true}",
                       "trusted_proxies: [10.0.0.0/8]\n"));
    // The balancer says the peer is 10.1.2.3, a trusted proxy that names the client.
    ASSERT_TRUE(sent_reaches_origin(
        "PROXY TCP4 10.1.2.3 127.0.0.1 40000 80\r\n"
        "GET /shop/x HTTP/1.1\r\nHost: shop.test\r\nX-Forwarded-For: 198.51.100.7\r\n"
        "Connection: close\r\n\r\n"));
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-For"), "198.51.100.7, 10.1.2.3");
    // The same from the socket's own peer (127.0.0.1, untrusted) is not believed.
    EXPECT_FALSE(sent_reaches_origin(
        "PROXY UNKNOWN\r\n"
        "GET /shop/x HTTP/1.1\r\nHost: shop.test\r\nX-Forwarded-For: 198.51.100.7\r\n"
        "Connection: close\r\n\r\n"));
}

}  // namespace
}  // namespace waitroom::test
