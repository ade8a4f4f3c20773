// The flat message heads and the parser that fills them: lookup, editing, reuse, and the body
// handed over piece by piece.
#include "head_parser.hpp"

#include <gtest/gtest.h>
#include <boost/asio/buffer.hpp>

#include <string>
#include <vector>

#include "waitroom/gateway/message_head.hpp"

namespace waitroom::gateway {
namespace {

TEST(MessageHead, FindsFieldsByEnumAndByNameWhateverTheCase) {
    request_head h;
    h.insert(http::field::host, "shop.test");
    h.insert("X-Custom", "1");
    h.insert("x-custom", "2");
    h.insert(http::field::cookie, "a=b");
    EXPECT_EQ(h[http::field::host], "shop.test");
    EXPECT_EQ(h["HOST"], "shop.test");
    EXPECT_EQ(h["x-CUSTOM"], "1");
    EXPECT_EQ(h.count("X-Custom"), 2u);
    EXPECT_EQ(h.count(http::field::cookie), 1u);
    EXPECT_EQ(h["X-Missing"], "");
    EXPECT_EQ(h.find(http::field::accept), h.end());
    EXPECT_EQ(h.find(http::field::cookie)->name_string(), "Cookie");  // canonical spelling
    std::vector<std::string> order;
    for (const auto& f : h) {
        order.emplace_back(f.name_string());
    }
    EXPECT_EQ(order, (std::vector<std::string>{"Host", "X-Custom", "x-custom", "Cookie"}));
}

TEST(MessageHead, SetsAndErasesFields) {
    response_head h;
    h.insert("Cf-Waiting-Room-Command", "revoke");
    h.insert(http::field::set_cookie, "a=1");
    h.insert("cf-waiting-room-command", "other");
    h.erase("CF-Waiting-Room-Command");
    EXPECT_EQ(h.size(), 1u);
    h.set(http::field::set_cookie, "b=2");
    EXPECT_EQ(h.count(http::field::set_cookie), 1u);
    EXPECT_EQ(h[http::field::set_cookie], "b=2");
    h.insert(http::field::etag, "\"x\"");
    auto it = h.erase(h.find(http::field::set_cookie));
    EXPECT_EQ(it->name(), http::field::etag);
    // A value copied from the head itself survives the buffer growing (under ASan a dangling
    // copy would be caught): copy it enough times that the buffer must move.
    for (int i = 0; i < 200; ++i) {
        h.insert("X-Copy", h[http::field::etag]);
    }
    EXPECT_EQ(h.count("X-Copy"), 200u);
    for (const auto& f : h) {
        if (f.name_string() == "X-Copy") {
            EXPECT_EQ(f.value(), "\"x\"");
        }
    }
}

TEST(MessageHead, ClearsForTheNextMessage) {
    request_head h;
    h.method_string("BREW");
    h.target("/a");
    h.version(10);
    h.insert(http::field::host, "x");
    EXPECT_EQ(h.method(), http::verb::unknown);
    EXPECT_EQ(h.method_string(), "BREW");
    h.clear();
    EXPECT_EQ(h.size(), 0u);
    EXPECT_EQ(h.target(), "");
    EXPECT_EQ(h.version(), 11u);
    h.method(http::verb::post);
    EXPECT_EQ(h.method_string(), "POST");
}

TEST(HeadParser, ParsesARequestHeadInPlace) {
    request_head h;
    head_parser<true> p(h);
    const std::string text =
        "GET /cart?x=1 HTTP/1.1\r\nHost: shop.test\r\nCookie: a=b\r\nConnection: close\r\n\r\n";
    error_code ec;
    EXPECT_EQ(p.put(asio::buffer(text), ec), text.size());
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(p.is_done());
    EXPECT_EQ(h.method(), http::verb::get);
    EXPECT_EQ(h.target(), "/cart?x=1");
    EXPECT_EQ(h.version(), 11u);
    EXPECT_EQ(h[http::field::cookie], "a=b");
    EXPECT_FALSE(p.keep_alive());

    head_parser<true> again(h);  // the next request on the connection reuses the head
    const std::string next = "POST /b HTTP/1.0\r\nX-A: 1\r\n\r\n";
    again.put(asio::buffer(next), ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(h.size(), 1u);
    EXPECT_EQ(h.target(), "/b");
    EXPECT_EQ(h.version(), 10u);
}

TEST(HeadParser, KeepsTheReasonAndHandsTheBodyOverPieceByPiece) {
    response_head h;
    head_parser<false> p(h);
    p.eager(true);
    const std::string text =
        "HTTP/1.1 404 Not Here\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    error_code ec;
    std::size_t used = p.put(asio::buffer(text), ec);  // no room for the body yet
    EXPECT_EQ(ec, http::error::need_buffer);
    ASSERT_TRUE(p.is_header_done());
    EXPECT_EQ(h.result_int(), 404u);
    EXPECT_EQ(h.reason(), "Not Here");
    EXPECT_TRUE(p.chunked());

    std::string body;
    char piece[4];
    while (!p.is_done()) {
        p.body().data = piece;
        p.body().size = sizeof piece;
        used += p.put(asio::buffer(text.data() + used, text.size() - used), ec);
        ASSERT_TRUE(!ec || ec == http::error::need_buffer) << ec.message();
        body.append(piece, sizeof piece - p.body().size);
    }
    EXPECT_EQ(body, "hello world");
    EXPECT_EQ(used, text.size());
}

}  // namespace
}  // namespace waitroom::gateway
