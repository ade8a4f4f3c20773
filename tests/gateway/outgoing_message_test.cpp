// The outgoing message's buffers: head, raw and chunk-framed pieces, partial sends, and what a
// non-blocking socket takes inline; and heads of responses the gateway answers itself.
#include "outgoing_message.hpp"

#include <gtest/gtest.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>

namespace waitroom::gateway {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

std::string flatten(const outgoing_message& m) {
    std::string s;
    for (const auto& b : m.buffers()) {
        s.append(static_cast<const char*>(b.data()), b.size());
    }
    return s;
}

TEST(OutgoingMessage, SendsHeadWithFirstPieceAndRawBody) {
    outgoing_message m;
    m.head(false) = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    m.queue("abc", 3, false);
    EXPECT_EQ(flatten(m), "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc");
    EXPECT_EQ(m.buffers().size(), 1u);  // small: joined, one plain send
    EXPECT_FALSE(m.done());
    m.sent();
    m.queue("de", 2, true);
    EXPECT_EQ(flatten(m), "de");  // the head goes once
    EXPECT_FALSE(m.done());
    m.sent();
    EXPECT_TRUE(m.done());
}

TEST(OutgoingMessage, FramesChunkedPiecesAndEndsWithLastChunk) {
    outgoing_message m;
    m.head(true) = "H\r\n\r\n";
    m.queue(nullptr, 0, false);  // the head alone
    EXPECT_EQ(flatten(m), "H\r\n\r\n");
    m.sent();
    std::string big(300, 'x');
    m.queue(big.data(), big.size(), false);
    EXPECT_EQ(flatten(m), "12c\r\n" + big + "\r\n");
    m.sent();
    m.queue("yz", 2, true);
    EXPECT_EQ(flatten(m), "2\r\nyz\r\n0\r\n\r\n");
    m.sent();
    EXPECT_TRUE(m.done());
    m.head(true) = "H\r\n\r\n";
    m.queue(nullptr, 0, true);  // an empty chunked body
    EXPECT_EQ(flatten(m), "H\r\n\r\n0\r\n\r\n");
}

TEST(OutgoingMessage, JoinsASmallMessageIntoOneBuffer) {
    outgoing_message m;
    m.head(true) = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    m.queue("hello", 5, true);
    EXPECT_EQ(m.buffers().size(), 1u);  // one plain send
    EXPECT_EQ(flatten(m),
              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\n0\r\n\r\n");
    m.sent();
    std::string big(64 * 1024, 'b');
    m.head(false) = "H\r\n\r\n";
    m.queue(big.data(), big.size(), true);
    EXPECT_EQ(m.buffers().size(), 2u);  // a large body is sent from where it is, not copied
    EXPECT_EQ(m.buffers()[1].data(), big.data());
}

TEST(OutgoingMessage, ConsumesAcrossBuffersAndResendsTheHead) {
    outgoing_message m;
    m.head(true) = "HEAD\r\n\r\n";
    m.queue("hello", 5, true);
    const std::string all = flatten(m);
    for (std::size_t cut = 0; cut <= all.size(); ++cut) {
        outgoing_message c;
        c.head(true) = "HEAD\r\n\r\n";
        c.queue("hello", 5, true);
        c.consume(cut);
        EXPECT_EQ(flatten(c), all.substr(cut)) << cut;
        EXPECT_EQ(c.empty(), cut == all.size());
    }
    m.sent();
    m.resend_head();  // a retry on a fresh connection
    m.queue(nullptr, 0, true);
    EXPECT_EQ(flatten(m), "HEAD\r\n\r\n0\r\n\r\n");
}

TEST(OutgoingMessage, WritesInlineUntilTheSocketIsFull) {
    asio::io_context ioc;
    asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    tcp_socket writer(ioc.get_executor()), reader(ioc.get_executor());
    writer.connect(acceptor.local_endpoint());
    acceptor.accept(reader);
    writer.non_blocking(true);

    outgoing_message m;
    m.head(false) = "head:";
    m.queue("body", 4, true);
    boost::system::error_code ec;
    ASSERT_TRUE(write_now(writer, m, ec));
    EXPECT_FALSE(ec);
    EXPECT_TRUE(m.done());
    std::string got(9, '\0');
    asio::read(reader, asio::buffer(got));
    EXPECT_EQ(got, "head:body");

    // Nobody reads: the socket fills, write_now stops at would_block with the rest queued.
    std::string big(8 << 20, 'z');
    m.head(false);
    m.queue(big.data(), big.size(), true);
    EXPECT_FALSE(write_now(writer, m, ec));
    EXPECT_FALSE(ec);
    EXPECT_FALSE(m.empty());
    EXPECT_LT(flatten(m).size(), big.size());
}

TEST(OutgoingMessage, WritesLocalResponseHeads) {
    std::string text;
    write_local_head(text, 11, 503, {{"Content-Type", "text/html"}, {"Refresh", "5"}}, 1234, false);
    http::response_parser<http::string_body> p;
    boost::system::error_code ec;
    p.put(asio::buffer(text), ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(p.is_header_done());
    EXPECT_TRUE(text.starts_with("HTTP/1.1 503 Service Unavailable\r\n")) << text;
    EXPECT_EQ(p.get()[http::field::content_type], "text/html");
    EXPECT_EQ(p.get()["Refresh"], "5");
    EXPECT_EQ(p.content_length().value_or(0), 1234u);
    EXPECT_FALSE(p.get().keep_alive());

    text.clear();
    write_local_head(text, 10, 200, {}, 0, true);
    EXPECT_EQ(text, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
}

// A queue page's fields come already written: they go out first, as a list's would.
TEST(OutgoingMessage, WritesFieldsGivenAsTextBeforeTheListedOnes) {
    std::string text;
    write_local_head(text, 11, 200, "Cache-Control: no-store\r\nRefresh: 20\r\n",
                     {{"Set-Cookie", "a=b"}}, 5, true);
    EXPECT_EQ(text,
              "HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nRefresh: 20\r\nSet-Cookie: a=b\r\n"
              "Content-Length: 5\r\n\r\n");
}

}  // namespace
}  // namespace waitroom::gateway
