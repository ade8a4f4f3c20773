// Chunk-size lines judged byte by byte: valid lines and their valid beginnings pass, and a line
// is refused at its first impossible byte, whether it comes whole or in pieces.
#include "chunk_line.hpp"

#include <gtest/gtest.h>

#include <boost/beast/core/flat_buffer.hpp>

#include <array>
#include <string>
#include <vector>

#include "head_parser.hpp"

namespace waitroom::gateway {
namespace {

using verdict = chunk_line_scan::verdict;

TEST(ChunkLine, ReadsAWholeLineWithItsExtensionsUpToItsCrlf) {
    const std::string line = "1a;name=value;flag ; q=\"a \\\"b\\\" \x80\"\r\n";
    const auto r = check_chunk_line(line + "more bytes");
    EXPECT_EQ(r.what, verdict::complete);
    EXPECT_EQ(r.length, line.size());
    EXPECT_EQ(check_chunk_line("0\r\n").length, 3u);
}

TEST(ChunkLine, LetsEveryBeginningOfAValidLineWait) {
    const std::string line = "ff ;\tx = \"quoted ; = value\" ;y=tok\r\n";
    for (std::size_t n = 0; n + 2 < line.size(); ++n) {
        EXPECT_EQ(check_chunk_line(line.substr(0, n)).what, verdict::partial) << n;
    }
    EXPECT_EQ(check_chunk_line(line).what, verdict::complete);
}

TEST(ChunkLine, RefusesAControlByteInAnUnterminatedQuotedValueAtOnce) {
    EXPECT_EQ(check_chunk_line("5;x=\"unterminated\x01\x7f;;;").what, verdict::malformed);
    EXPECT_EQ(check_chunk_line("5;x=\"unterminated\x7f").what, verdict::malformed);
    EXPECT_EQ(check_chunk_line("5;x=\"\\\x01").what,
              verdict::malformed);  // escaped, still a control
}

TEST(ChunkLine, RefusesAQuotedValueThatTheLineEndCuts) {
    EXPECT_EQ(check_chunk_line("5;x=\"open\r").what, verdict::malformed);
    EXPECT_EQ(check_chunk_line("5;x=\"open\r\n").what, verdict::malformed);
}

TEST(ChunkLine, RefusesWhatNoChunkLineCanHold) {
    const std::vector<std::string> cases = {
        "",         "g",       "5\x01",      "5;",
        "5;=v",     "5;a=",    "5;a b",      "5 \r",
        "5;a \r",   "5;a=b c", "5;a=b\"",    "5\rx",
        "5;a=\x01", "5\n",     "5;a=\"b\"c", std::string("5;a\0", 4)};
    for (const auto& bad : cases) {
        if (bad.empty()) {
            EXPECT_EQ(check_chunk_line(bad).what, verdict::partial);
            continue;
        }
        const auto r = check_chunk_line(bad + "\r\n");
        EXPECT_EQ(r.what, verdict::malformed) << bad;
    }
}

TEST(ChunkLine, HoldsWholeExtensionsToTheSameGrammar) {
    EXPECT_TRUE(valid_chunk_extensions(""));
    EXPECT_TRUE(valid_chunk_extensions(";a=b;c;d=\"e f\""));
    EXPECT_TRUE(valid_chunk_extensions(" ; a = b"));
    EXPECT_FALSE(valid_chunk_extensions(";x=\"a\x01\x7f\""));  // Beast would let this through
    EXPECT_FALSE(valid_chunk_extensions(";a "));
    EXPECT_FALSE(valid_chunk_extensions(" "));
    EXPECT_FALSE(valid_chunk_extensions(";a=\"b"));
    EXPECT_FALSE(valid_chunk_extensions(";a\r"));
}

TEST(ChunkWaitProblem, RefusesAMalformedChunkLineAsSoonAsItsBadByteArrives) {
    EXPECT_EQ(chunk_wait_problem("5;x=\"unterminated\x01\x7f;;;", 1 << 20),
              http::error::bad_chunk_extension);
    EXPECT_EQ(chunk_wait_problem("\r\n5;x=\"a\x01", 1 << 20), http::error::bad_chunk_extension);
    EXPECT_EQ(chunk_wait_problem("\rx", 1 << 20), http::error::bad_chunk_extension);
    EXPECT_FALSE(chunk_wait_problem("\r", 1 << 20));
    EXPECT_FALSE(chunk_wait_problem("\r\n5;x=\"a b", 1 << 20));
}

// Feeds `buffer` to `p` as the session does between reads (the body into a small piece).
error_code feed(head_parser<true>& p, beast::flat_buffer& buffer) {
    std::array<char, 64> piece{};
    error_code ec;
    while (buffer.size() > 0 && !p.is_done()) {
        p.body().data = piece.data();
        p.body().size = piece.size();
        const auto used = p.put(buffer.data(), ec);
        buffer.consume(used);
        if (ec == http::error::need_more || (!ec && used == 0)) {
            return {};
        }
        if (ec && ec != http::error::need_buffer) {
            return ec;
        }
    }
    return {};
}

// A chunked request whose body is `body`, parsed from one read or from one read per byte.
error_code parse_chunked(std::string_view body, bool byte_by_byte) {
    request_head head;
    head_parser<true> p(head);
    const std::string all =
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(body);
    beast::flat_buffer buffer;
    const std::size_t step = byte_by_byte ? 1 : all.size();
    for (std::size_t at = 0; at < all.size() && !p.is_done(); at += step) {
        const auto part = std::string_view(all).substr(at, step);
        buffer.commit(asio::buffer_copy(buffer.prepare(part.size()), asio::buffer(part)));
        if (auto ec = feed(p, buffer)) {
            return ec;
        }
        const auto pending = buffer.cdata();
        if (p.is_header_done() && !p.is_done()) {
            if (auto problem = chunk_wait_problem(
                    {static_cast<const char*>(pending.data()), pending.size()}, 4096)) {
                return problem;
            }
        }
    }
    return p.is_done() ? error_code{} : error_code(http::error::need_more);
}

TEST(ChunkLine, AParserJudgesALineAlikeWholeOrInPieces) {
    for (const std::string body :
         {"5;x=\"a\x01\"\r\nhello\r\n0\r\n\r\n", "5;x=\"ok\"\r\nhello\r\n0\r\n\r\n",
          "5;a=b\r\nhello\r\n0;e=\"\x7f\"\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"}) {
        const auto whole = parse_chunked(body, false);
        const auto pieces = parse_chunked(body, true);
        EXPECT_EQ(static_cast<bool>(whole), static_cast<bool>(pieces))
            << body << ": " << whole.message() << " / " << pieces.message();
        const bool valid = body.find_first_of("\x01\x7f") == std::string::npos;
        EXPECT_EQ(!whole, valid) << body << ": " << whole.message();
    }
}

}  // namespace
}  // namespace waitroom::gateway
