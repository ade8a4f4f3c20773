// The HTTP/2 server codec, without sockets: a real nghttp2 client for what clients do, and
// hand-built frames for what attackers do.
#include "h2_codec.hpp"

#include <gtest/gtest.h>
#include <malloc.h>

#include "h2_test_peers.hpp"

namespace waitroom::gateway {
namespace {

using namespace h2_test;
using header_pairs = std::vector<std::pair<std::string_view, std::string_view>>;

std::string field_value(const fields& head, std::string_view name) {
    for (const auto& [n, v] : head) {
        if (n == name) {
            return v;
        }
    }
    return "<none>";
}

// --- what clients do -------------------------------------------------------------------------

TEST(H2Codec, TurnsAGetIntoAnHttp11HeadWithTheAuthorityAsHost) {
    recorder events;
    h2_codec codec(events, {}, clock::now());
    client c(codec);
    fields head = client::get("/shop?x=1");
    head.emplace_back("accept", "text/html");
    const auto id = c.request(head);
    c.pump();

    ASSERT_EQ(events.requests.size(), 1u);
    const auto& r = events.requests[0];
    EXPECT_EQ(r.id, id);
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.target, "/shop?x=1");
    EXPECT_TRUE(r.end_stream);
    EXPECT_EQ(r.head.size(), 2u);
    EXPECT_EQ(field_value(r.head, "Host"), "shop.example.com");
    EXPECT_EQ(field_value(r.head, "accept"), "text/html");

    const header_pairs response = {{"Content-Type", "text/plain"}, {"Connection", "close"}};
    codec.respond(id, 200, response, true);
    const std::string body = "hello";
    codec.send_body(id, body, true);
    c.pump();
    ASSERT_TRUE(c.responses[id].closed.has_value());
    EXPECT_EQ(*c.responses[id].closed, 0u);
    EXPECT_EQ(field_value(c.responses[id].head, ":status"), "200");
    EXPECT_EQ(field_value(c.responses[id].head, "content-type"), "text/plain");
    EXPECT_EQ(field_value(c.responses[id].head, "connection"), "<none>");
    EXPECT_EQ(c.responses[id].body, "hello");
    EXPECT_EQ(events.closed, (std::vector<std::pair<std::int32_t, std::uint32_t>>{{id, 0}}));
}

TEST(H2Codec, OpensTheRequestBodyWindowOnlyAsTheGatewayConsumes) {
    recorder events;
    h2_limits limits;
    limits.stream_window = 16384;
    h2_codec codec(events, limits, clock::now());
    client c(codec);
    c.pump();  // the client learns our window before it sends
    fields head = client::get("/upload");
    head[0].second = "POST";
    head.emplace_back("content-length", "50000");
    const auto id = c.request(head, std::string(50000, 'b'));
    c.pump();

    ASSERT_EQ(events.requests.size(), 1u);
    EXPECT_EQ(events.requests[0].content_length, std::optional<std::uint64_t>(50000));
    EXPECT_FALSE(events.requests[0].end_stream);
    EXPECT_EQ(events.bodies[id].size(), 16384u);  // the window, no more
    for (int i = 0; i < 10 && events.bodies[id].size() < 50000; ++i) {
        codec.consume(id, events.bodies[id].size());
        c.pump();
    }
    EXPECT_EQ(events.bodies[id], std::string(50000, 'b'));
    EXPECT_TRUE(events.ended[id]);
}

TEST(H2Codec, JoinsCookieFieldsIntoOneSoTheWaitingRoomCookieIsFound) {
    recorder events;
    h2_codec codec(events, {}, clock::now());
    client c(codec);
    fields head = client::get();
    head.emplace_back("cookie", "a=1");
    head.emplace_back("accept", "*/*");
    head.emplace_back("cookie", "_cfwaitingroom=abc");
    c.request(head);
    c.pump();
    ASSERT_EQ(events.requests.size(), 1u);
    const auto& h = events.requests[0].head;
    EXPECT_EQ(h.size(), 3u);  // Host, accept, one Cookie
    EXPECT_EQ(field_value(h, "Cookie"), "a=1; _cfwaitingroom=abc");
    EXPECT_EQ(field_value(h, "accept"), "*/*");
    EXPECT_EQ(field_value(h, "cookie"), "<none>");
}

TEST(H2Codec, SendsAResponseBodyGivenInSeveralPieces) {
    recorder events;
    h2_codec codec(events, {}, clock::now());
    client c(codec);
    const std::vector<std::string> pieces = {std::string(70000, 'x'), "middle",
                                             std::string(30000, 'z')};
    std::size_t next = 0;
    events.when_request = [&](const h2_request& r) {
        codec.respond(r.stream_id, 200, {}, true);
        codec.send_body(r.stream_id, pieces[next], false);
    };
    events.when_body_sent = [&](std::int32_t id) {
        ++next;
        if (next < pieces.size()) {
            codec.send_body(id, pieces[next], next + 1 == pieces.size());
        }
    };
    const auto id = c.request(client::get());
    c.pump();
    EXPECT_EQ(events.body_sent.size(), 3u);
    EXPECT_EQ(c.responses[id].body, pieces[0] + pieces[1] + pieces[2]);
    EXPECT_EQ(c.responses[id].closed, std::optional<std::uint32_t>(0));
}

TEST(H2Codec, TellsTheGatewayWhenTheClientResetsAStream) {
    recorder events;
    h2_codec codec(events, {}, clock::now());
    client c(codec);
    const auto id = c.request(client::get());
    c.pump();
    ASSERT_EQ(events.requests.size(), 1u);
    nghttp2_submit_rst_stream(c.session(), NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    c.pump();
    EXPECT_EQ(events.closed,
              (std::vector<std::pair<std::int32_t, std::uint32_t>>{{id, NGHTTP2_CANCEL}}));
    EXPECT_EQ(codec.stats().resets_by_client, 1u);
    EXPECT_TRUE(c.alive);
}

TEST(H2Codec, ShutdownLetsStreamsInFlightFinishAndRefusesNewOnes) {
    recorder events;
    h2_codec codec(events, {}, clock::now());
    client c(codec);
    const auto first = c.request(client::get("/a"));
    const auto second = c.request(client::get("/b"));
    c.pump();
    ASSERT_EQ(events.requests.size(), 2u);
    codec.shutdown();
    c.pump();
    EXPECT_EQ(c.goaway_code, std::optional<std::uint32_t>(NGHTTP2_NO_ERROR));
    EXPECT_EQ(c.goaway_last_stream, second);

    const std::string body = "done";
    for (auto id : {first, second}) {
        codec.respond(id, 200, {}, true);
        codec.send_body(id, body, true);
    }
    c.pump();
    EXPECT_EQ(c.responses[first].body, "done");
    EXPECT_EQ(c.responses[second].body, "done");
    EXPECT_EQ(events.closed.size(), 2u);
    EXPECT_TRUE(codec.finished());
}

// --- malformed requests (RFC 9113 §8.1.1, §8.2, §8.3) -----------------------------------------

struct malformed_case {
    const char* name;
    fields extra;        // appended after the pseudo-headers
    fields pseudo = {};  // replaces them when not empty
};

class H2CodecMalformed : public testing::TestWithParam<malformed_case> {};

TEST_P(H2CodecMalformed, ResetsTheStreamWithProtocolErrorBeforeTheGatewaySeesIt) {
    raw_peer peer;
    fields head = GetParam().pseudo.empty() ? raw_peer::get() : GetParam().pseudo;
    head.insert(head.end(), GetParam().extra.begin(), GetParam().extra.end());
    peer.send(peer.headers(1, head));
    EXPECT_TRUE(peer.events.requests.empty());
    EXPECT_EQ(peer.rst_code(1), std::optional<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    EXPECT_TRUE(peer.alive);
    // The connection goes on: the next request is served.
    peer.send(peer.headers(3, raw_peer::get()));
    EXPECT_EQ(peer.events.requests.size(), 1u);
}

const fields no_authority = {{":method", "GET"}, {":scheme", "https"}, {":path", "/"}};

INSTANTIATE_TEST_SUITE_P(
    EachCase, H2CodecMalformed,
    testing::Values(
        malformed_case{"connection", {{"connection", "keep-alive"}}},
        malformed_case{"transfer_encoding", {{"transfer-encoding", "chunked"}}},
        malformed_case{"keep_alive", {{"keep-alive", "5"}}},
        malformed_case{"upgrade", {{"upgrade", "websocket"}}},
        malformed_case{"proxy_connection", {{"proxy-connection", "close"}}},
        malformed_case{"te_not_trailers", {{"te", "gzip"}}},
        malformed_case{"upper_case_name", {{"X-Big", "1"}}},
        malformed_case{"colon_in_name", {{"x:y", "1"}}},
        malformed_case{"cr_in_value", {{"x", "a\rb"}}},
        malformed_case{"lf_in_value", {{"x", "a\nb"}}},
        malformed_case{"nul_in_value", {{"x", std::string("a\0b", 3)}}},
        malformed_case{"leading_space", {{"x", " a"}}},
        malformed_case{"trailing_tab", {{"x", "a\t"}}},
        malformed_case{"control_char", {{"x", "a\x01z"}}},
        malformed_case{"bad_content_length", {{"content-length", "1x"}}},
        malformed_case{"no_authority_no_host", {}, no_authority},
        malformed_case{
            "bad_scheme",
            {},
            {{":method", "GET"}, {":scheme", "ftp"}, {":authority", "a"}, {":path", "/"}}},
        malformed_case{
            "relative_path",
            {},
            {{":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "x"}}},
        malformed_case{
            "userinfo",
            {},
            {{":method", "GET"}, {":scheme", "https"}, {":authority", "u@a"}, {":path", "/"}}},
        malformed_case{"extended_connect",
                       {},
                       {{":method", "CONNECT"},
                        {":protocol", "websocket"},
                        {":scheme", "https"},
                        {":authority", "a"},
                        {":path", "/chat"}}},
        malformed_case{"body_declared_on_end_stream", {{"content-length", "3"}}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(H2Codec, ResetsAHostThatDisagreesWithTheAuthorityWithProtocolError) {
    raw_peer peer;
    fields head = raw_peer::get();
    head.emplace_back("host", "other.example.com");
    peer.send(peer.headers(1, head));
    EXPECT_TRUE(peer.events.requests.empty());
    EXPECT_EQ(peer.rst_code(1), std::optional<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    EXPECT_FALSE(peer.status(1).has_value());
    EXPECT_EQ(peer.codec.stats().malformed, 1u);
}

TEST(H2Codec, TakesTheHostFieldWhenThereIsNoAuthority) {
    raw_peer peer;
    fields head = no_authority;
    head.emplace_back("host", "shop.example.com");
    peer.send(peer.headers(1, head));
    ASSERT_EQ(peer.events.requests.size(), 1u);
    EXPECT_EQ(peer.events.requests[0].head, (fields{{"Host", "shop.example.com"}}));
}

TEST(H2Codec, AcceptsTeTrailers) {
    raw_peer peer;
    fields head = raw_peer::get();
    head.emplace_back("te", "trailers");
    peer.send(peer.headers(1, head));
    EXPECT_EQ(peer.events.requests.size(), 1u);
}

TEST(H2Codec, PassesConnectForTheGatewayToRefuse) {
    raw_peer peer;
    peer.send(
        peer.headers(1, {{":method", "CONNECT"}, {":authority", "origin.example:443"}}, false));
    ASSERT_EQ(peer.events.requests.size(), 1u);
    EXPECT_EQ(peer.events.requests[0].method, "CONNECT");
    EXPECT_EQ(peer.events.requests[0].target, "origin.example:443");
}

fields post_with_length(std::string_view length) {
    fields head = raw_peer::get("/form");
    head[0].second = "POST";
    head.emplace_back("content-length", std::string(length));
    return head;
}

TEST(H2Codec, ResetsABodyLongerThanItsContentLength) {
    raw_peer peer;
    peer.send(peer.headers(1, post_with_length("3"), false));
    ASSERT_EQ(peer.events.requests.size(), 1u);
    peer.send(raw_peer::data(1, "12345", true));
    EXPECT_EQ(peer.rst_code(1), std::optional<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    EXPECT_FALSE(peer.events.ended[1]);
    EXPECT_LE(peer.events.bodies[1].size(), 3u);
    ASSERT_EQ(peer.events.closed.size(), 1u);
    EXPECT_EQ(peer.events.closed[0].second, std::uint32_t(NGHTTP2_PROTOCOL_ERROR));
}

TEST(H2Codec, ResetsABodyShorterThanItsContentLength) {
    raw_peer peer;
    peer.send(peer.headers(1, post_with_length("5"), false));
    peer.send(raw_peer::data(1, "123", true));
    EXPECT_EQ(peer.rst_code(1), std::optional<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    EXPECT_FALSE(peer.events.ended[1]);
}

TEST(H2Codec, DropsTrailersAndEndsTheBody) {
    raw_peer peer;
    peer.send(peer.headers(1, post_with_length("2"), false));
    peer.send(raw_peer::data(1, "ok", false));
    peer.send(peer.headers(1, {{"x-checksum", "abc"}}, true));
    ASSERT_EQ(peer.events.requests.size(), 1u);
    EXPECT_EQ(peer.events.bodies[1], "ok");
    EXPECT_TRUE(peer.events.ended[1]);
    EXPECT_EQ(peer.events.requests[0].head.size(), 2u);  // Host, content-length
    EXPECT_FALSE(peer.rst_code(1).has_value());
}

TEST(H2Codec, RefusesTrailersOverTheHeaderLimit) {
    h2_limits limits;
    limits.max_header_bytes = 1024;
    raw_peer peer(limits);
    peer.send(peer.headers(1, post_with_length("2"), false));
    peer.send(raw_peer::data(1, "ok", false));
    peer.send(peer.headers(1, {{"x-pad", std::string(2000, 'p')}}, true));
    EXPECT_FALSE(peer.events.ended[1]);
    EXPECT_EQ(peer.rst_code(1), std::optional<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
}

// --- bounds --------------------------------------------------------------------------------

// Before the client acknowledges our SETTINGS, a stream over the limit is refused (it may retry);
// after, nghttp2 takes it as a connection error.
TEST(H2Codec, RefusesAStreamOverTheConcurrencyLimitBeforeTheSettingsAreAcknowledged) {
    h2_limits limits;
    limits.max_concurrent_streams = 2;
    raw_peer peer(limits);
    for (std::int32_t id : {1, 3, 5}) {
        peer.send(peer.headers(id, raw_peer::get(), false));
    }
    EXPECT_EQ(peer.events.requests.size(), 2u);
    EXPECT_EQ(peer.rst_code(5), std::optional<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
    EXPECT_TRUE(peer.alive);
}

TEST(H2Codec, EndsAConnectionThatPassesTheAcknowledgedConcurrencyLimit) {
    h2_limits limits;
    limits.max_concurrent_streams = 2;
    raw_peer peer(limits);
    peer.send(frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
    for (std::int32_t id : {1, 3, 5}) {
        peer.send(peer.headers(id, raw_peer::get(), false));
    }
    EXPECT_EQ(peer.events.requests.size(), 2u);
    EXPECT_EQ(peer.goaway_code(), std::optional<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    // nghttp2 wrote its GOAWAY: the codec is done, reads nothing more, and the gateway lets go
    // of the two streams it held.
    EXPECT_TRUE(peer.codec.finished());
    EXPECT_FALSE(peer.send(peer.headers(7, raw_peer::get())));
    EXPECT_EQ(peer.events.requests.size(), 2u);
    EXPECT_EQ(peer.events.closed.size(), 2u);
}

// An HPACK block that decodes to `copies` times one `size`-byte field: the field once, added
// to the dynamic table, then `copies - 1` one-byte references to it.
std::string hpack_bomb(std::size_t size, std::size_t copies) {
    std::string b = "\x82\x87\x84";  // :method GET, :scheme https, :path / (static table)
    b += "\x41";                     // :authority, literal, indexed name 1
    b += static_cast<char>(11);
    b += "example.com";
    b += "\x40";  // a new name, literal with incremental indexing
    b += static_cast<char>(1);
    b += "x";
    // The value's length as an HPACK integer with a 7-bit prefix.
    std::size_t n = size;
    if (n < 127) {
        b += static_cast<char>(n);
    } else {
        b += static_cast<char>(127);
        n -= 127;
        while (n >= 128) {
            b += static_cast<char>(0x80 | (n & 0x7f));
            n >>= 7;
        }
        b += static_cast<char>(n);
    }
    b += std::string(size, 'v');
    // The dynamic table now holds `x` at index 62, `:authority` at 63.
    b += std::string(copies - 1, '\xbe');
    return b;
}

TEST(H2Codec, RefusesAnHpackBombWithoutKeepingItsFields) {
    raw_peer peer;
    const std::string block = hpack_bomb(4000, 4000);  // 16 MB decoded from 8 KB
    const auto before = mallinfo2().uordblks;
    peer.send(frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, block));
    const auto grown = mallinfo2().uordblks - std::min(before, mallinfo2().uordblks);
    EXPECT_TRUE(peer.events.requests.empty());
    EXPECT_EQ(peer.rst_code(1), std::optional<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
    EXPECT_LT(grown, 256u * 1024u);
    EXPECT_EQ(peer.codec.stats().malformed, 1u);
}

// A header block split over frames is under way from its HEADERS frame until the frame with
// END_HEADERS: the connection bounds that time (header_timeout), so the codec says when it began.
TEST(H2Codec, TellsWhenTheHeaderBlockUnderWayBegan) {
    raw_peer peer;
    EXPECT_FALSE(peer.codec.header_block_since().has_value());
    const std::string block = peer.block(raw_peer::get());
    const auto began = peer.now;
    ASSERT_TRUE(peer.send(frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, block.substr(0, 3))));
    EXPECT_EQ(peer.codec.header_block_since(), std::optional(began));
    EXPECT_TRUE(peer.events.requests.empty());
    peer.now += std::chrono::seconds(1);
    ASSERT_TRUE(
        peer.send(frame(NGHTTP2_CONTINUATION, NGHTTP2_FLAG_END_HEADERS, 1, block.substr(3))));
    EXPECT_FALSE(peer.codec.header_block_since().has_value());
    EXPECT_EQ(peer.events.requests.size(), 1u);
}

// Ending the connection at once ends the streams the gateway was handed, with a GOAWAY.
TEST(H2Codec, TerminateSendsGoawayAndClosesTheStreamsHandedOver) {
    raw_peer peer;
    ASSERT_TRUE(peer.send(peer.headers(1, raw_peer::get())));
    ASSERT_EQ(peer.events.requests.size(), 1u);
    peer.codec.terminate(h2_error::protocol_error);
    peer.drain();
    EXPECT_EQ(peer.goaway_code(), std::optional<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    ASSERT_EQ(peer.events.closed.size(), 1u);
    EXPECT_EQ(peer.events.closed[0].first, 1);
    EXPECT_FALSE(peer.send(peer.headers(3, raw_peer::get())));
    EXPECT_EQ(peer.events.requests.size(), 1u);
}

TEST(H2Codec, EndsAConnectionFloodedWithContinuationFrames) {
    raw_peer peer;
    std::string flood = frame(NGHTTP2_HEADERS, 0, 1, peer.block(raw_peer::get()));
    for (int i = 0; i < 1000; ++i) {
        flood += frame(NGHTTP2_CONTINUATION, 0, 1, "\x40\x01x\x01y");
    }
    EXPECT_FALSE(peer.send(flood));
    EXPECT_TRUE(peer.events.requests.empty());
    EXPECT_EQ(peer.goaway_code(), std::optional<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST(H2Codec, EndsARapidResetStormBeforeTheGatewaySeesMoreThanTheBurst) {
    h2_limits limits;
    raw_peer peer(limits);
    std::string storm;
    for (std::int32_t id = 1; id < 2 * 1000; id += 2) {
        storm += peer.headers(id, raw_peer::get());
        storm += raw_peer::rst(id, NGHTTP2_CANCEL);
    }
    EXPECT_FALSE(peer.send(storm));
    EXPECT_EQ(peer.goaway_code(), std::optional<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
    EXPECT_LE(peer.events.requests.size(), limits.reset_burst + 1);
    EXPECT_GE(peer.events.requests.size(), limits.reset_burst);
    EXPECT_EQ(peer.codec.stats().goaway_calm, 1u);
}

TEST(H2Codec, LetsResetsThroughAtTheSustainedRate) {
    h2_limits limits;
    raw_peer peer(limits);
    // Past the burst, at 50 a second (under resets_per_second) on the codec's clock.
    const std::size_t streams = limits.reset_burst + limits.reset_burst / 2;
    for (std::int32_t id = 1; id < static_cast<std::int32_t>(2 * streams); id += 2) {
        peer.now += std::chrono::milliseconds(20);
        ASSERT_TRUE(peer.send(peer.headers(id, raw_peer::get()) + raw_peer::rst(id, 8)));
    }
    EXPECT_EQ(peer.events.requests.size(), streams);
}

struct flood_case {
    const char* name;
    std::string frame;
};

class H2CodecFlood : public testing::TestWithParam<flood_case> {};

TEST_P(H2CodecFlood, EndsTheConnectionWithEnhanceYourCalm) {
    raw_peer peer;
    peer.send(peer.headers(1, post_with_length("10"), false));  // an open stream for DATA
    std::string flood;
    for (int i = 0; i < 5000; ++i) {
        flood += GetParam().frame;
    }
    EXPECT_FALSE(peer.send(flood));
    EXPECT_EQ(peer.goaway_code(), std::optional<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

INSTANTIATE_TEST_SUITE_P(
    EachFrameType, H2CodecFlood,
    testing::Values(flood_case{"settings", frame(NGHTTP2_SETTINGS, 0, 0, "")},
                    flood_case{"ping", frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'))},
                    flood_case{"priority",
                               frame(NGHTTP2_PRIORITY, 0, 3, u32(1) + std::string(1, '\x10'))},
                    flood_case{"window_update", frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(1))},
                    flood_case{"empty_data", frame(NGHTTP2_DATA, 0, 1, "")},
                    flood_case{"padding_only_data",
                               frame(NGHTTP2_DATA, NGHTTP2_FLAG_PADDED, 1, std::string(1, '\0'))}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(H2Codec, EndsAFloodOfEmptyHeadersFrames) {
    raw_peer peer;
    std::string flood;
    for (std::int32_t id = 1; id < 2 * 1000; id += 2) {
        flood += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, "");
    }
    EXPECT_FALSE(peer.send(flood));
    EXPECT_TRUE(peer.events.requests.empty());
    const auto code = peer.goaway_code();
    ASSERT_TRUE(code.has_value());
}

TEST(H2Codec, BoundsTheAcksQueuedForAClientThatNeverReads) {
    h2_limits limits;
    limits.control_burst = 1000000;
    limits.control_per_second = 1000000;
    limits.max_outbound_ack = 100;
    raw_peer peer(limits);
    peer.reading = false;
    std::string pings;
    for (int i = 0; i < 5000; ++i) {
        pings += frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
    }
    EXPECT_FALSE(peer.send(pings));
    std::size_t total = 0;
    for (auto out = peer.codec.output(); !out.empty(); out = peer.codec.output()) {
        total += out.size();
        peer.codec.consumed(out.size());
    }
    EXPECT_LT(total, 200u * 17u + 200u);  // about max_outbound_ack ACKs, not 5000
}

TEST(H2Codec, TakesNoResponseBodyWhileTheClientWindowIsShut) {
    raw_peer peer({}, std::string("\x00\x04", 2) + u32(0));  // INITIAL_WINDOW_SIZE 0
    peer.send(peer.headers(1, raw_peer::get()));
    ASSERT_EQ(peer.events.requests.size(), 1u);
    const std::string body(100000, 'r');
    peer.codec.respond(1, 200, {}, true);
    peer.codec.send_body(1, body, true);
    peer.drain();
    EXPECT_TRUE(peer.events.body_sent.empty());
    EXPECT_EQ(peer.count(NGHTTP2_DATA), 0u);
    EXPECT_TRUE(peer.codec.output().empty());
    // The windows open: the body goes.
    peer.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(200000)) +
              frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(200000)));
    EXPECT_EQ(peer.events.body_sent.size(), 1u);
}

TEST(H2Codec, HandsOutputOverInBoundedBatches) {
    raw_peer peer({}, std::string("\x00\x04", 2) + u32(1 << 24));
    peer.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(1 << 24)));
    peer.reading = false;
    peer.send(peer.headers(1, raw_peer::get()));
    const std::string body(1 << 20, 'r');
    peer.codec.respond(1, 200, {}, true);
    peer.codec.send_body(1, body, true);
    const auto out = peer.codec.output();
    EXPECT_GT(out.size(), 0u);
    EXPECT_LE(out.size(), 64u * 1024u + 16384u + 9u);
    EXPECT_TRUE(peer.events.body_sent.empty());  // most of the piece is still the caller's
}

TEST(H2Codec, GivesTheConnectionWindowBackForBodiesOfGoneStreams) {
    recorder events;
    h2_limits limits;
    limits.connection_window = 65535;  // so that 60000 bytes given back show at once
    h2_codec codec(events, limits, clock::now());
    client c(codec);
    c.pump();
    fields head = client::get("/upload");
    head[0].second = "POST";
    const auto id = c.request(head, std::string(60000, 'b'));
    c.pump();
    ASSERT_EQ(events.bodies[id].size(), 60000u);
    codec.reset(id, h2_error::cancel);
    c.pump();
    EXPECT_EQ(nghttp2_session_get_remote_window_size(c.session()),
              static_cast<std::int32_t>(limits.connection_window));
}

}  // namespace
}  // namespace waitroom::gateway
