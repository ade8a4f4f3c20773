// Which X-Forwarded-For address is the visitor behind trusted proxies, and address parsing.
#include "client_ip.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include "waitroom/config/values.hpp"

namespace waitroom::gateway {
namespace {

std::vector<config::cidr> nets(std::initializer_list<std::string_view> texts) {
    std::vector<config::cidr> out;
    for (auto t : texts) {
        out.push_back(*config::parse_cidr(t));
    }
    return out;
}

// The pick as text, "" for none.
std::string pick(std::initializer_list<std::string_view> fields,
                 const std::vector<config::cidr>& trusted) {
    std::vector<std::string_view> v(fields);
    auto ip = select_client(v, trusted);
    std::string out;
    if (ip) {
        format_ip(*ip, out);
    }
    return out;
}

const auto trusted = nets({"10.0.0.0/8", "192.168.1.1", "2001:db8:1::/48"});

TEST(ForwardedFor, TakesTheRightmostAddressThatIsNotTrusted) {
    EXPECT_EQ(pick({"203.0.113.9"}, trusted), "203.0.113.9");
    EXPECT_EQ(pick({"198.51.100.1, 203.0.113.9, 10.1.2.3"}, trusted), "203.0.113.9");
    // The visitor's forged left part is never reached.
    EXPECT_EQ(pick({"1.1.1.1, 203.0.113.9, 192.168.1.1, 10.0.0.1"}, trusted), "203.0.113.9");
}

TEST(ForwardedFor, ReadsSeveralFieldsAsOneListInOrder) {
    EXPECT_EQ(pick({"1.1.1.1, 203.0.113.9", "10.0.0.2"}, trusted), "203.0.113.9");
    EXPECT_EQ(pick({"1.1.1.1", "203.0.113.9, 10.0.0.2"}, trusted), "203.0.113.9");
    EXPECT_EQ(pick({"10.0.0.1", "10.0.0.2"}, trusted), "10.0.0.1");
}

TEST(ForwardedFor, AllTrustedGivesTheLeftmost) {
    EXPECT_EQ(pick({"10.9.9.9, 10.0.0.1"}, trusted), "10.9.9.9");
}

TEST(ForwardedFor, NoFieldOrOnlyEmptyElementsGivesNothing) {
    EXPECT_EQ(pick({}, trusted), "");
    EXPECT_EQ(pick({"", " , ,"}, trusted), "");
    EXPECT_EQ(pick({"203.0.113.9, ,"}, trusted), "203.0.113.9");
}

TEST(ForwardedFor, JunkStopsTheWalkAtTheLastTrustedAddress) {
    // Nothing left of junk can be vouched for: never the forged address behind it.
    EXPECT_EQ(pick({"203.0.113.9, unknown, 10.0.0.1"}, trusted), "10.0.0.1");
    EXPECT_EQ(pick({"203.0.113.9, 10.0.0.7 10.0.0.8, 10.0.0.1"}, trusted), "10.0.0.1");
    EXPECT_EQ(pick({"203.0.113.9, _hidden"}, trusted), "");
    EXPECT_EQ(pick({"1.2.3.4.5"}, trusted), "");
    EXPECT_EQ(pick({"203.0.113.9, 999.1.1.1"}, trusted), "");
    EXPECT_EQ(pick({"203.0.113.9, 10.0.0.1\x01"}, trusted), "");
}

TEST(ForwardedFor, ReadsIpv6BracketsPortsAndV4Mapped) {
    EXPECT_EQ(pick({"2001:db8:9::5"}, trusted), "2001:db8:9::5");
    EXPECT_EQ(pick({"[2001:db8:9::5]:443, 2001:db8:1::1"}, trusted), "2001:db8:9::5");
    EXPECT_EQ(pick({"203.0.113.9:5555, [2001:db8:1::7]"}, trusted), "203.0.113.9");
    // A v4-mapped IPv6 address is the IPv4 address, for trust and for its text.
    EXPECT_EQ(pick({"203.0.113.9, ::ffff:10.0.0.3"}, trusted), "203.0.113.9");
    EXPECT_EQ(pick({"::ffff:203.0.113.9"}, trusted), "203.0.113.9");
    EXPECT_EQ(pick({"2001:DB8:9:0:0:0:0:5"}, trusted), "2001:db8:9::5");
}

TEST(ForwardedFor, RefusesMalformedAddressForms) {
    for (auto bad : {"[2001:db8::1", "[2001:db8::1]x", "[2001:db8::1]:", "[10.0.0.1]",
                     "10.0.0.1:", "10.0.0.1:123456", "10.0.0.1:8a", "2001:db8::1:80:x", "",
                     "unknown", "fe80::1%eth0", "0x7f.1"}) {
        EXPECT_FALSE(parse_forwarded_address(bad)) << bad;
    }
    EXPECT_TRUE(parse_forwarded_address(" 10.0.0.1 "));
    EXPECT_TRUE(parse_forwarded_address("[::1]:80"));
}

TEST(TrustedProxies, MatchWholeNetworksOnly) {
    auto ip = [](std::string_view s) { return *parse_forwarded_address(s); };
    EXPECT_TRUE(is_trusted(trusted, ip("10.255.255.255")));
    EXPECT_FALSE(is_trusted(trusted, ip("11.0.0.0")));
    EXPECT_TRUE(is_trusted(trusted, ip("192.168.1.1")));
    EXPECT_FALSE(is_trusted(trusted, ip("192.168.1.2")));
    EXPECT_TRUE(is_trusted(trusted, ip("2001:db8:1:ffff::1")));
    EXPECT_FALSE(is_trusted(trusted, ip("2001:db8:2::1")));
    // An IPv4 network never covers an IPv6 address that merely shares its bytes.
    EXPECT_FALSE(is_trusted(trusted, ip("::a00:1")));
    EXPECT_FALSE(is_trusted({}, ip("10.0.0.1")));
}

}  // namespace
}  // namespace waitroom::gateway
