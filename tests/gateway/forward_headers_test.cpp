// Header rewriting and framing checks, without sockets.
#include "forward_headers.hpp"

#include <gtest/gtest.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>

#include <string>

namespace waitroom::gateway {
namespace {

namespace http = boost::beast::http;

request_head make_request(unsigned version = 11) {
    request_head h;
    h.method(http::verb::post);
    h.target("/cart?x=1");
    h.version(version);
    h.set(http::field::host, "shop.example.com");
    return h;
}

// Parses a head written by write_origin_request / write_client_response the way its peer
// would, checking that it is exactly one well-formed head.
template <bool IsRequest>
http::header<IsRequest> parse_head(const std::string& text) {
    http::parser<IsRequest, http::empty_body> p;
    boost::system::error_code ec;
    const std::size_t used = p.put(boost::asio::buffer(text), ec);
    EXPECT_FALSE(ec) << ec.message() << "\n" << text;
    EXPECT_TRUE(p.is_header_done()) << text;
    EXPECT_EQ(used, text.size()) << text;
    EXPECT_TRUE(text.ends_with("\r\n\r\n")) << text;
    return p.get().base();
}

TEST(ForwardHeaders, AcceptsPlainFraming) {
    auto h = make_request();
    h.set(http::field::content_length, "12");
    EXPECT_EQ(request_problem(h), "");
    h.erase(http::field::content_length);
    h.set(http::field::transfer_encoding, "chunked");
    EXPECT_EQ(request_problem(h), "");
}

TEST(ForwardHeaders, RefusesContentLengthWithTransferEncoding) {
    auto h = make_request();
    h.set(http::field::content_length, "12");
    h.set(http::field::transfer_encoding, "chunked");
    EXPECT_NE(request_problem(h), "");
}

TEST(ForwardHeaders, RefusesDifferingContentLengths) {
    auto h = make_request();
    h.insert(http::field::content_length, "12");
    h.insert(http::field::content_length, "13");
    EXPECT_NE(request_problem(h), "");
}

TEST(ForwardHeaders, RefusesTransferEncodingOnHttp10AndOtherCodings) {
    auto h10 = make_request(10);
    h10.set(http::field::transfer_encoding, "chunked");
    EXPECT_NE(request_problem(h10), "");
    auto gz = make_request();
    gz.set(http::field::transfer_encoding, "gzip, chunked");
    EXPECT_NE(request_problem(gz), "");
}

TEST(ForwardHeaders, RefusesMoreThanOneHost) {
    auto h = make_request();
    EXPECT_EQ(request_problem(h), "");
    h.insert(http::field::host,
             "other.example");  // rooms would route on one, the origin use another
    EXPECT_NE(request_problem(h), "");
}

TEST(ForwardHeaders, RefusesControlCharactersInValues) {
    auto h = make_request();
    h.set("X-Evil", std::string("a\0b", 3));
    EXPECT_NE(request_problem(h), "");
}

// What the session passes for a request whose own target is forwarded (origin-form already).
forward_info info_for(std::string_view client_ip, bool tls, std::string_view origin_host,
                      std::string_view base_path) {
    forward_info info;
    info.client_ip = client_ip;
    info.tls = tls;
    info.origin_host = origin_host;
    info.base_path = base_path;
    return info;
}

TEST(ForwardHeaders, DropsHopByHopAndSetsForwardedHeaders) {
    auto in = make_request(10);
    in.set(http::field::connection, "keep-alive, X-Secret-Hop");
    in.set("X-Secret-Hop", "1");
    in.set(http::field::keep_alive, "timeout=5");
    in.set(http::field::proxy_authorization, "Basic abc");
    in.set(http::field::te, "trailers");
    in.set(http::field::upgrade, "h2c");
    in.set(http::field::expect, "100-continue");
    in.insert("X-Forwarded-For", "10.1.1.1");
    in.insert("x-forwarded-for", "10.2.2.2");
    in.set("X-Forwarded-Proto", "https");
    in.set("X-End-To-End", "kept");
    in.set(http::field::content_length, " 3");
    std::string text;
    forward_info info = info_for("192.0.2.7", false, "127.0.0.1:3000", "/base/");
    info.forwarded_host = "shop.example.com";
    info.keep_forwarded = true;
    write_origin_request(in, text, info);
    auto out = parse_head<true>(text);
    EXPECT_TRUE(text.starts_with("POST /base/cart?x=1 HTTP/1.1\r\n")) << text;
    EXPECT_EQ(out.version(), 11u);  // HTTP/1.1 to the origin whatever the client spoke
    EXPECT_EQ(out.count(http::field::host), 1u);
    EXPECT_EQ(out[http::field::host], "127.0.0.1:3000");
    EXPECT_EQ(out.count("X-Forwarded-For"), 1u);
    EXPECT_EQ(out["X-Forwarded-For"], "10.1.1.1, 10.2.2.2, 192.0.2.7");
    EXPECT_EQ(out.count("X-Forwarded-Proto"), 1u);
    EXPECT_EQ(out["X-Forwarded-Proto"], "http");
    EXPECT_EQ(out["X-Forwarded-Host"], "shop.example.com");
    EXPECT_EQ(out["X-End-To-End"], "kept");
    EXPECT_EQ(out[http::field::content_length], "3");
    for (auto name : {"Connection", "X-Secret-Hop", "Keep-Alive", "Proxy-Authorization", "TE",
                      "Upgrade", "Expect", "Transfer-Encoding"}) {
        EXPECT_EQ(out.count(name), 0u) << name;
    }
}

TEST(ForwardHeaders, OverwritesClientAddressFieldsOfAnUntrustedPeer) {
    auto in = make_request();
    in.insert("X-Forwarded-For", "198.51.100.7");
    in.insert("X-Real-IP", "198.51.100.7");
    in.insert("x-real-ip", "198.51.100.8");
    in.insert(http::field::forwarded, "for=198.51.100.7");
    std::string text;
    write_origin_request(in, text, info_for("2001:db8::5", true, "o", ""));
    auto out = parse_head<true>(text);
    EXPECT_EQ(out["X-Forwarded-For"], "2001:db8::5");
    EXPECT_EQ(out.count("X-Real-IP"), 1u);
    EXPECT_EQ(out["X-Real-IP"], "2001:db8::5");
    EXPECT_EQ(out.count(http::field::forwarded), 1u);
    EXPECT_EQ(out[http::field::forwarded], "for=\"[2001:db8::5]\";proto=https");

    // Never sent: never added.
    auto plain = make_request();
    text.clear();
    write_origin_request(plain, text, info_for("192.0.2.7", false, "o", ""));
    out = parse_head<true>(text);
    EXPECT_EQ(out.count("X-Real-IP"), 0u);
    EXPECT_EQ(out.count(http::field::forwarded), 0u);
}

TEST(ForwardHeaders, NeverPassesTheUnderscoreSpellingOfTheFieldsItSets) {
    // A CGI-style origin reads X_Real_IP as HTTP_X_REAL_IP, the variable X-Real-IP becomes.
    for (bool keep : {false, true}) {
        auto in = make_request();
        in.insert("X_Forwarded_For", "203.0.113.66");
        in.insert("x_real_ip", "203.0.113.66");
        in.insert("X_Forwarded_Proto", "https-forged");
        in.insert("X_FORWARDED_HOST", "forged.example");
        std::string text;
        auto info = info_for("192.0.2.7", false, "o", "");
        info.keep_forwarded = keep;
        write_origin_request(in, text, info);
        auto out = parse_head<true>(text);
        EXPECT_EQ(text.find("203.0.113.66"), std::string::npos) << text;
        EXPECT_EQ(text.find("forged"), std::string::npos) << text;
        EXPECT_EQ(out["X-Forwarded-For"], "192.0.2.7");
        EXPECT_EQ(out["X-Forwarded-Proto"], "http");
        EXPECT_EQ(out["X-Real-IP"], "192.0.2.7");  // sent under a spelling: replaced
    }
}

TEST(ForwardHeaders, KeepsATrustedChainAndAppendsThePeer) {
    auto in = make_request();
    in.insert("X-Forwarded-For", "198.51.100.7, 10.0.0.9");
    // Set by the visitor and passed on by the balancer: the balancer vouches for neither.
    in.insert("X-Real-IP", "203.0.113.66");
    in.insert(http::field::forwarded, "for=203.0.113.66");
    std::string text;
    auto info = info_for("198.51.100.7", false, "o", "");
    info.peer_ip = "10.0.0.5";
    info.keep_forwarded = true;
    write_origin_request(in, text, info);
    auto out = parse_head<true>(text);
    EXPECT_EQ(out["X-Forwarded-For"], "198.51.100.7, 10.0.0.9, 10.0.0.5");
    EXPECT_EQ(out["X-Real-IP"], "198.51.100.7");
    EXPECT_EQ(out[http::field::forwarded], "for=198.51.100.7;proto=http");
    EXPECT_EQ(text.find("203.0.113.66"), std::string::npos) << text;
}

TEST(ForwardHeaders, PassesTheClientsAddressFieldsOnlyWhenAskedTo) {
    auto in = make_request();
    in.insert("X-Forwarded-For", "198.51.100.7");
    in.insert("X-Real-IP", "198.51.100.7");
    in.insert(http::field::forwarded, "for=198.51.100.7");
    std::string text;
    auto info = info_for("10.0.0.5", false, "o", "");
    info.keep_forwarded = true;
    info.pass_client_fields = true;  // forwarded_headers: append
    write_origin_request(in, text, info);
    auto out = parse_head<true>(text);
    EXPECT_EQ(out["X-Forwarded-For"], "198.51.100.7, 10.0.0.5");
    EXPECT_EQ(out["X-Real-IP"], "198.51.100.7");
    EXPECT_EQ(out[http::field::forwarded], "for=198.51.100.7");
}

TEST(ForwardHeaders, DropsTheNamedFieldsWhateverTheirCase) {
    auto in = make_request();
    in.insert("X-Bypass", "secret-one");
    in.insert("x-bypass", "secret-two");
    in.insert("X-Other-Secret", "3");
    in.insert("X_Bypass", "secret-three");  // HTTP_X_BYPASS to a CGI-style origin
    in.insert("X-Kept", "1");
    const std::vector<std::string> drop{"X-BYPASS", "x-other-secret"};
    std::string text;
    auto info = info_for("192.0.2.7", false, "o", "");
    info.drop_fields = &drop;
    write_origin_request(in, text, info);
    auto out = parse_head<true>(text);
    EXPECT_EQ(out.count("X-Bypass"), 0u);
    EXPECT_EQ(out.count("X_Bypass"), 0u);
    EXPECT_EQ(out.count("X-Other-Secret"), 0u);
    EXPECT_EQ(out["X-Kept"], "1");
    EXPECT_EQ(text.find("secret"), std::string::npos) << text;
}

TEST(ForwardHeaders, SendsTheCanonicalTargetAndKeepsChunkedFraming) {
    auto in = make_request();
    in.target("http://shop.example.com//a/./b?c");
    in.set(http::field::transfer_encoding, "chunked");
    std::string text;
    forward_info info = info_for("192.0.2.7", true, "origin", "");
    info.path = "/a/b";  // as util::canonicalize_request read the target
    info.query = "?c";
    write_origin_request(in, text, info);
    auto out = parse_head<true>(text);
    EXPECT_EQ(out.target(), "/a/b?c");
    EXPECT_EQ(out.count("X-Forwarded-Host"), 0u);  // none given: the request had no Host
    EXPECT_EQ(out[http::field::transfer_encoding], "chunked");
    EXPECT_EQ(out.count(http::field::content_length), 0u);
    EXPECT_EQ(out["X-Forwarded-For"], "192.0.2.7");

    auto star = make_request();
    star.method(http::verb::options);
    star.target("*");
    text.clear();
    forward_info star_info = info_for("192.0.2.7", false, "origin", "/base");
    star_info.path = "*";
    write_origin_request(star, text, star_info);
    EXPECT_EQ(parse_head<true>(text).target(), "*");

    auto odd = make_request();
    odd.method_string("PURGE");
    text.clear();
    write_origin_request(odd, text, info_for("192.0.2.7", false, "origin", "/base"));
    EXPECT_TRUE(text.starts_with("PURGE /base/cart?x=1 HTTP/1.1\r\n")) << text;
}

TEST(ForwardHeaders, KeepsOnlyWebSocketUpgrade) {
    auto in = make_request();
    in.method(http::verb::get);
    in.set(http::field::connection, "Upgrade");
    in.set(http::field::upgrade, "websocket");
    in.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
    std::string text;
    write_origin_request(in, text, info_for("127.0.0.1", true, "origin", ""));
    auto out = parse_head<true>(text);
    EXPECT_EQ(out[http::field::upgrade], "websocket");
    EXPECT_EQ(out[http::field::connection], "Upgrade");
    EXPECT_EQ(out[http::field::sec_websocket_key], "dGhlIHNhbXBsZSBub25jZQ==");
    EXPECT_EQ(out["X-Forwarded-Proto"], "https");
}

response_head origin_response() {
    response_head in;
    in.result(200);
    in.reason("Fine");
    in.set(http::field::connection, "close, X-Hop");
    in.set("X-Hop", "1");
    in.set(http::field::transfer_encoding, "chunked");
    in.set(http::field::content_length, "10");
    in.set(http::field::set_cookie, "a=b");
    return in;
}

TEST(ForwardHeaders, DropsHopByHopFromResponses) {
    const header_list extra = {{"Set-Cookie", "_cfwaitingroom=x"}};
    client_framing how;
    how.kind = client_framing::body::length;
    how.length = 42;
    how.extra = &extra;
    std::string text;
    auto in = origin_response();
    strip_hop_by_hop(in);
    write_client_response(in, text, how);
    auto out = parse_head<false>(text);
    EXPECT_TRUE(text.starts_with("HTTP/1.1 200 Fine\r\n")) << text;
    EXPECT_EQ(out.count("X-Hop"), 0u);
    EXPECT_EQ(out.count(http::field::transfer_encoding), 0u);
    EXPECT_EQ(out.count(http::field::connection), 0u);  // HTTP/1.1 keep-alive is the default
    EXPECT_EQ(out[http::field::content_length], "42");
    EXPECT_EQ(out.count(http::field::set_cookie), 2u);
}

// The filter adds its Set-Cookie after the strip: a name the origin's Connection lists cannot
// drop it, while the origin's own fields so named are gone.
TEST(ForwardHeaders, StripsHopByHopBeforeTheFilterAddsItsFields) {
    auto in = origin_response();  // Connection: close, X-Hop; X-Hop; TE; CL; Set-Cookie a=b
    in.set(http::field::connection, "close, X-Hop, Set-Cookie");
    strip_hop_by_hop(in);
    EXPECT_EQ(in.count(http::field::connection), 0u);
    EXPECT_EQ(in.count("X-Hop"), 0u);
    EXPECT_EQ(in.count(http::field::transfer_encoding), 0u);
    EXPECT_EQ(in.count(http::field::set_cookie), 0u);
    EXPECT_EQ(in[http::field::content_length], "10");        // framing stays for HEAD/304
    in.insert(http::field::set_cookie, "_cfwaitingroom=v");  // what the room filter does
    std::string text;
    client_framing how;
    how.kind = client_framing::body::length;
    how.length = 10;
    write_client_response(in, text, how);
    auto out = parse_head<false>(text);
    EXPECT_EQ(out[http::field::set_cookie], "_cfwaitingroom=v");
}

TEST(ForwardHeaders, FramesResponsesForTheClient) {
    auto in = origin_response();
    in.set(http::field::content_length, "10");
    strip_hop_by_hop(in);
    std::string text;
    client_framing how;

    how.kind = client_framing::body::chunked;
    how.keep_alive = false;
    write_client_response(in, text, how);
    auto chunked = parse_head<false>(text);
    EXPECT_EQ(chunked[http::field::transfer_encoding], "chunked");
    EXPECT_EQ(chunked.count(http::field::content_length), 0u);
    EXPECT_EQ(chunked[http::field::connection], "close");

    text.clear();
    how = {};
    how.version = 10;
    how.kind = client_framing::body::until_close;
    how.keep_alive = false;
    write_client_response(in, text, how);
    auto until_close = parse_head<false>(text);
    EXPECT_TRUE(text.starts_with("HTTP/1.0 200 Fine\r\n")) << text;
    EXPECT_EQ(until_close.count(http::field::content_length), 0u);
    EXPECT_EQ(until_close.count(http::field::transfer_encoding), 0u);
    EXPECT_EQ(until_close.count(http::field::connection), 0u);  // HTTP/1.0 closes by default

    text.clear();
    how = {};
    how.version = 10;
    how.kind = client_framing::body::as_origin;  // HEAD: the origin's length stays
    write_client_response(in, text, how);
    auto head = parse_head<false>(text);
    EXPECT_EQ(head[http::field::content_length], "10");
    EXPECT_EQ(head[http::field::connection], "keep-alive");

    text.clear();
    response_head switching;
    switching.result(http::status::switching_protocols);
    switching.set(http::field::upgrade, "websocket");
    switching.set(http::field::connection, "upgrade");
    switching.set(http::field::sec_websocket_accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    strip_hop_by_hop(switching);
    how = {};
    how.websocket_101 = true;
    write_client_response(switching, text, how);
    auto ws = parse_head<false>(text);
    EXPECT_TRUE(text.starts_with("HTTP/1.1 101 Switching Protocols\r\n")) << text;
    EXPECT_EQ(ws[http::field::upgrade], "websocket");
    EXPECT_EQ(ws[http::field::connection], "Upgrade");
    EXPECT_EQ(ws.count(http::field::connection), 1u);
    EXPECT_EQ(ws[http::field::sec_websocket_accept], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

}  // namespace
}  // namespace waitroom::gateway
