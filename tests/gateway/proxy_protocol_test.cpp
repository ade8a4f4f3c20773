// The PROXY protocol header parser (v1 text, v2 binary), fed whole and byte by byte.
#include "proxy_protocol.hpp"

#include <gtest/gtest.h>

#include <string>

#include "client_ip.hpp"

namespace waitroom::gateway {
namespace {

using proxy_protocol::parse;
using proxy_protocol::status;

std::string source_of(const proxy_protocol::result& r) {
    std::string out;
    if (r.has_source) {
        format_ip(r.source, out);
    }
    return out;
}

// Feeds `bytes` one more byte at a time, as a slow peer would: every proper prefix must ask
// for more, and the whole must give the same answer as at once.
proxy_protocol::result fed_in_pieces(const std::string& bytes) {
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        auto r = parse(std::string_view(bytes).substr(0, n));
        if (r.what != status::need_more) {
            return r;
        }
    }
    return parse(bytes);
}

std::string v2(unsigned char ver_cmd, unsigned char fam, const std::string& body) {
    std::string h("\r\n\r\n\0\r\nQUIT\n", 12);
    h += static_cast<char>(ver_cmd);
    h += static_cast<char>(fam);
    h += static_cast<char>(body.size() >> 8);
    h += static_cast<char>(body.size() & 0xff);
    return h + body;
}

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) {
        s += static_cast<char>(c);
    }
    return s;
}

TEST(ProxyProtocolV1, ReadsTcp4AndLeavesWhatFollows) {
    const std::string head = "PROXY TCP4 203.0.113.9 198.51.100.1 56324 443\r\n";
    auto r = parse(head + "GET / HTTP/1.1\r\n");
    ASSERT_EQ(r.what, status::done);
    EXPECT_EQ(r.size, head.size());
    EXPECT_EQ(source_of(r), "203.0.113.9");
    EXPECT_EQ(r.source_port, 56324);
    EXPECT_EQ(fed_in_pieces(head).what, status::done);
}

TEST(ProxyProtocolV1, ReadsTcp6AndUnknown) {
    auto r = parse("PROXY TCP6 2001:db8::9 2001:db8::1 1 65535\r\n");
    ASSERT_EQ(r.what, status::done);
    EXPECT_EQ(source_of(r), "2001:db8::9");
    auto u = parse("PROXY UNKNOWN\r\n");
    EXPECT_EQ(u.what, status::done);
    EXPECT_FALSE(u.has_source);
    auto u2 = parse("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n");
    EXPECT_EQ(u2.what, status::done);
    EXPECT_FALSE(u2.has_source);
}

TEST(ProxyProtocolV1, RefusesMalformedLines) {
    for (const char* bad : {
             "PROXY TCP4 203.0.113.9 198.51.100.1 56324\r\n",        // a field short
             "PROXY TCP4 203.0.113.9 198.51.100.1 56324 443 x\r\n",  // a field too many
             "PROXY TCP4 203.0.113.9  198.51.100.1 56324 443\r\n",   // two spaces
             "PROXY TCP4 2001:db8::9 198.51.100.1 1 2\r\n",          // family mismatch
             "PROXY TCP6 203.0.113.9 2001:db8::1 1 2\r\n",
             "PROXY TCP4 203.0.113.9 198.51.100.1 65536 443\r\n",  // port range
             "PROXY TCP4 203.0.113.9 198.51.100.1 0443 443\r\n",   // leading zero
             "PROXY TCP4 203.0.113.9 198.51.100.1 -1 443\r\n",
             "PROXY UDP4 203.0.113.9 198.51.100.1 1 2\r\n",
             "PROXY TCP4 203.0.113.9 198.51.100.1 1 2\n",     // LF alone
             "PROXY TCP4 203.0.113.9\r198.51.100.1 1 2\r\n",  // CR alone
             "PROXY UNKNOWN x\ny\r\n",  // LF alone, even where anything may follow UNKNOWN
             "PROXY UNKNOWN x\ry\r\n", "proxy TCP4 203.0.113.9 198.51.100.1 1 2\r\n",
             "GET / HTTP/1.1\r\n",
             "\x16\x03\x01\x02\x00",  // a TLS ClientHello without the header
         }) {
        EXPECT_EQ(parse(bad).what, status::invalid) << bad;
        EXPECT_EQ(fed_in_pieces(bad).what, status::invalid) << bad;
    }
}

TEST(ProxyProtocolV1, RefusesALineLongerThan107Bytes) {
    std::string longest = "PROXY UNKNOWN " + std::string(107 - 16, 'x') + "\r\n";
    ASSERT_EQ(longest.size(), 107u);
    EXPECT_EQ(parse(longest).what, status::done);
    std::string over = "PROXY UNKNOWN " + std::string(107 - 15, 'x') + "\r\n";
    EXPECT_EQ(parse(over).what, status::invalid);
    // Without its end, the bound is met after 107 bytes, not after however much is sent.
    EXPECT_EQ(parse("PROXY UNKNOWN " + std::string(200, 'x')).what, status::invalid);
    EXPECT_EQ(parse("PROXY UNKNOWN " + std::string(50, 'x')).what, status::need_more);
}

TEST(ProxyProtocolV2, ReadsIpv4WithTlvsAndLeavesWhatFollows) {
    std::string body = bytes({203, 0, 113, 9, 198, 51, 100, 1, 0xdc, 0x04, 0x01, 0xbb});
    body += bytes({0x04, 0x00, 0x03}) + "abc";  // a NOOP TLV: skipped
    const std::string head = v2(0x21, 0x11, body);
    auto r = parse(head + "\x16\x03\x01");
    ASSERT_EQ(r.what, status::done);
    EXPECT_EQ(r.size, head.size());
    EXPECT_EQ(source_of(r), "203.0.113.9");
    EXPECT_EQ(r.source_port, 0xdc04);
    EXPECT_EQ(fed_in_pieces(head).what, status::done);
}

TEST(ProxyProtocolV2, ReadsIpv6) {
    std::string body(36, '\0');
    body[0] = 0x20;
    body[1] = 0x01;
    body[2] = 0x0d;
    body[3] = static_cast<char>(0xb8);
    body[15] = 9;
    auto r = parse(v2(0x21, 0x21, body));
    ASSERT_EQ(r.what, status::done);
    EXPECT_EQ(source_of(r), "2001:db8::9");
}

TEST(ProxyProtocolV2, LocalAndUnspecKeepThePeer) {
    auto local = parse(v2(0x20, 0x00, ""));
    ASSERT_EQ(local.what, status::done);
    EXPECT_EQ(local.size, 16u);
    EXPECT_FALSE(local.has_source);
    // LOCAL with addresses (a health check from the balancer itself): still the peer.
    auto local4 = parse(v2(0x20, 0x11, std::string(12, '\1')));
    ASSERT_EQ(local4.what, status::done);
    EXPECT_FALSE(local4.has_source);
    auto unspec = parse(v2(0x21, 0x00, ""));
    ASSERT_EQ(unspec.what, status::done);
    EXPECT_FALSE(unspec.has_source);
    auto udp = parse(v2(0x21, 0x12, std::string(12, '\1')));
    ASSERT_EQ(udp.what, status::done);
    EXPECT_FALSE(udp.has_source);
}

TEST(ProxyProtocolV2, RefusesBadVersionCommandFamilyAndShortAddresses) {
    for (const auto& bad : {
             v2(0x11, 0x11, std::string(12, '\1')),   // version 1 in a v2 frame
             v2(0x22, 0x11, std::string(12, '\1')),   // command 2
             v2(0x21, 0x41, std::string(12, '\1')),   // family 4
             v2(0x21, 0x13, std::string(12, '\1')),   // transport 3
             v2(0x21, 0x11, std::string(11, '\1')),   // IPv4 block short
             v2(0x21, 0x21, std::string(35, '\1')),   // IPv6 block short
             v2(0x21, 0x31, std::string(200, '\1')),  // UNIX block short
         }) {
        EXPECT_EQ(parse(bad).what, status::invalid);
    }
    std::string wrong_sig = v2(0x21, 0x11, std::string(12, '\1'));
    wrong_sig[11] = 'X';
    EXPECT_EQ(parse(wrong_sig).what, status::invalid);
    EXPECT_EQ(parse(wrong_sig.substr(0, 11)).what, status::need_more);
}

TEST(ProxyProtocolV2, RefusesAHeaderOverItsBoundBeforeItArrives) {
    std::string body(proxy_protocol::max_v2_size - 16, '\0');
    body.replace(0, 12, bytes({203, 0, 113, 9, 198, 51, 100, 1, 0, 1, 0, 2}));
    EXPECT_EQ(parse(v2(0x21, 0x11, body)).what, status::done);
    // The length field alone says it is too big: refused on its first 16 bytes.
    std::string over = v2(0x21, 0x11, body + "x");
    EXPECT_EQ(parse(over.substr(0, 16)).what, status::invalid);
    std::string huge = v2(0x21, 0x11, std::string(65535, '\0'));
    EXPECT_EQ(parse(huge).what, status::invalid);
}

TEST(ProxyProtocolV2, TruncatedHeadersAskForMore) {
    std::string head = v2(0x21, 0x11, std::string(12, '\1'));
    for (std::size_t n = 0; n < head.size(); ++n) {
        EXPECT_EQ(parse(head.substr(0, n)).what, status::need_more) << n;
    }
}

}  // namespace
}  // namespace waitroom::gateway
