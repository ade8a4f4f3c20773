// Header rewriting and framing checks, without sockets.
#include "forward_headers.hpp"

#include <gtest/gtest.h>
#include <boost/beast/http/message.hpp>

namespace waitroom::gateway {
namespace {

namespace http = boost::beast::http;

http::request_header<> make_request(unsigned version = 11) {
    http::request_header<> h;
    h.method(http::verb::post);
    h.target("/cart?x=1");
    h.version(version);
    h.set(http::field::host, "shop.example.com");
    return h;
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

TEST(ForwardHeaders, RefusesControlCharactersInValues) {
    auto h = make_request();
    h.set("X-Evil", std::string("a\0b", 3));
    EXPECT_NE(request_problem(h), "");
}

TEST(ForwardHeaders, DropsHopByHopAndSetsForwardedHeaders) {
    auto in = make_request();
    in.set(http::field::connection, "keep-alive, X-Secret-Hop");
    in.set("X-Secret-Hop", "1");
    in.set(http::field::keep_alive, "timeout=5");
    in.set(http::field::proxy_authorization, "Basic abc");
    in.set(http::field::te, "trailers");
    in.set(http::field::upgrade, "h2c");
    in.set(http::field::expect, "100-continue");
    in.set("X-Forwarded-For", "10.1.1.1");
    in.set("X-Forwarded-Proto", "https");
    in.set("X-End-To-End", "kept");
    in.set(http::field::content_length, "3");
    http::request_header<> out;
    build_origin_request(in, out, {"192.0.2.7", false, "127.0.0.1:3000", "/base/"});
    EXPECT_EQ(out.target(), "/base/cart?x=1");
    EXPECT_EQ(out[http::field::host], "127.0.0.1:3000");
    EXPECT_EQ(out["X-Forwarded-For"], "10.1.1.1, 192.0.2.7");
    EXPECT_EQ(out["X-Forwarded-Proto"], "http");
    EXPECT_EQ(out["X-Forwarded-Host"], "shop.example.com");
    EXPECT_EQ(out["X-End-To-End"], "kept");
    EXPECT_EQ(out[http::field::content_length], "3");
    for (auto name : {"Connection", "X-Secret-Hop", "Keep-Alive", "Proxy-Authorization", "TE",
                      "Upgrade", "Expect"}) {
        EXPECT_EQ(out.count(name), 0u) << name;
    }
}

TEST(ForwardHeaders, KeepsOnlyWebSocketUpgrade) {
    auto in = make_request();
    in.method(http::verb::get);
    in.set(http::field::connection, "Upgrade");
    in.set(http::field::upgrade, "websocket");
    in.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
    http::request_header<> out;
    build_origin_request(in, out, {"127.0.0.1", true, "origin", ""});
    EXPECT_EQ(out[http::field::upgrade], "websocket");
    EXPECT_EQ(out[http::field::connection], "Upgrade");
    EXPECT_EQ(out[http::field::sec_websocket_key], "dGhlIHNhbXBsZSBub25jZQ==");
    EXPECT_EQ(out["X-Forwarded-Proto"], "https");
}

TEST(ForwardHeaders, DropsHopByHopFromResponses) {
    http::response_header<> in;
    in.result(200);
    in.set(http::field::connection, "close, X-Hop");
    in.set("X-Hop", "1");
    in.set(http::field::transfer_encoding, "chunked");
    in.set(http::field::set_cookie, "a=b");
    http::response_header<> out;
    build_client_response(in, out, false);
    EXPECT_EQ(out.count("X-Hop"), 0u);
    EXPECT_EQ(out.count(http::field::transfer_encoding), 0u);
    EXPECT_EQ(out.count(http::field::connection), 0u);
    EXPECT_EQ(out[http::field::set_cookie], "a=b");
}

}  // namespace
}  // namespace waitroom::gateway
