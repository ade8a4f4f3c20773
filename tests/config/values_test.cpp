// The value syntaxes of the configuration file: durations, sizes, times, CIDRs, addresses, URLs.

#include <gtest/gtest.h>

#include "waitroom/config/values.hpp"

namespace waitroom::config {
namespace {

using namespace std::chrono_literals;

// A URL the test expects accepted: a refusal fails the test instead of crashing it.
http_url http(std::string_view text) {
    auto u = parse_http_url(text);
    if (!u) {
        ADD_FAILURE() << "refused: " << text;
        return {};
    }
    return *u;
}

redis_url redis(std::string_view text) {
    auto u = parse_redis_url(text);
    if (!u) {
        ADD_FAILURE() << "refused: " << text;
        return {};
    }
    return *u;
}

TEST(ParseDuration, ReadsEveryUnitAndCombinations) {
    EXPECT_EQ(parse_duration("250ms"), duration{250});
    EXPECT_EQ(parse_duration("90s"), duration{90'000});
    EXPECT_EQ(parse_duration("5m"), duration{300'000});
    EXPECT_EQ(parse_duration("2h"), duration{7'200'000});
    EXPECT_EQ(parse_duration("1h30m"), duration{5'400'000});
    EXPECT_EQ(parse_duration("1m30s500ms"), duration{90'500});
    EXPECT_EQ(parse_duration("0s"), duration{0});
}

TEST(ParseDuration, RejectsBareNumbersUnknownUnitsAndDisorder) {
    EXPECT_FALSE(parse_duration("300"));
    EXPECT_FALSE(parse_duration(""));
    EXPECT_FALSE(parse_duration("5 m"));
    EXPECT_FALSE(parse_duration("5d"));
    EXPECT_FALSE(parse_duration("30m1h"));
    EXPECT_FALSE(parse_duration("5m5m"));
    EXPECT_FALSE(parse_duration("-5s"));
    EXPECT_FALSE(parse_duration("1.5s"));
    EXPECT_FALSE(parse_duration("s"));
}

TEST(ParseSize, ReadsBytesAndBinaryAndDecimalUnits) {
    EXPECT_EQ(parse_size("16384"), 16384u);
    EXPECT_EQ(parse_size("16KiB"), 16384u);
    EXPECT_EQ(parse_size("1MiB"), 1048576u);
    EXPECT_EQ(parse_size("1GiB"), 1073741824u);
    EXPECT_EQ(parse_size("2KB"), 2000u);
    EXPECT_EQ(parse_size("512B"), 512u);
    EXPECT_FALSE(parse_size("1TiB"));
    EXPECT_FALSE(parse_size("KiB"));
    EXPECT_FALSE(parse_size("-1"));
    EXPECT_FALSE(parse_size("1 MiB"));
}

TEST(ParseRfc3339, ReadsUtcAndOffsetsAndFractions) {
    auto utc = parse_rfc3339("2026-12-01T10:00:00Z");
    ASSERT_TRUE(utc);
    EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(utc->time_since_epoch()).count(),
              1796119200);
    EXPECT_EQ(parse_rfc3339("2026-12-01T11:00:00+01:00"), utc);
    EXPECT_EQ(parse_rfc3339("2026-12-01T05:30:00-04:30"), utc);
    EXPECT_EQ(parse_rfc3339("2026-12-01t10:00:00z"), utc);
    auto frac = parse_rfc3339("2026-12-01T10:00:00.25Z");
    ASSERT_TRUE(frac);
    EXPECT_EQ(*frac - *utc, std::chrono::milliseconds{250});
}

TEST(ParseRfc3339, RejectsMissingZoneImpossibleDatesAndOtherLayouts) {
    EXPECT_FALSE(parse_rfc3339("2026-12-01T10:00:00"));
    EXPECT_FALSE(parse_rfc3339("2026-02-30T10:00:00Z"));
    EXPECT_FALSE(parse_rfc3339("2026-12-01T24:00:00Z"));
    EXPECT_FALSE(parse_rfc3339("2026-12-01 10:00Z"));
    EXPECT_FALSE(parse_rfc3339("01/12/2026 10:00:00Z"));
    EXPECT_FALSE(parse_rfc3339("2026-12-01T10:00:00+0100"));
    EXPECT_FALSE(parse_rfc3339("2026-12-01T10:00:00.Z"));
}

TEST(ParseRfc3339, RefusesYearsTheClockCannotHoldInsteadOfOverflowing) {
    EXPECT_FALSE(parse_rfc3339("9999-12-31T23:59:59Z"));
    EXPECT_FALSE(parse_rfc3339("2263-01-01T00:00:00Z"));
    EXPECT_FALSE(parse_rfc3339("1900-01-01T00:00:00Z"));
    auto last = parse_rfc3339("2200-12-31T23:59:59.999999999+00:00");
    ASSERT_TRUE(last);
    EXPECT_GT(*last, *parse_rfc3339("2200-01-01T00:00:00Z"));
}

TEST(ParseCidr, MapsIpv4IntoIpv6AndClearsHostBits) {
    auto v4 = parse_cidr("10.1.2.3/8");
    ASSERT_TRUE(v4);
    EXPECT_EQ(v4->prefix_len, 104u);
    EXPECT_EQ(v4->net[10], 0xff);
    EXPECT_EQ(v4->net[11], 0xff);
    EXPECT_EQ(v4->net[12], 10);
    EXPECT_EQ(v4->net[13], 0);
    EXPECT_EQ(v4->net[15], 0);
    auto single = parse_cidr("192.168.1.7");
    ASSERT_TRUE(single);
    EXPECT_EQ(single->prefix_len, 128u);
    EXPECT_EQ(single->net[15], 7);
    auto v6 = parse_cidr("2001:db8:ffff::1/32");
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->prefix_len, 32u);
    EXPECT_EQ(v6->net[0], 0x20);
    EXPECT_EQ(v6->net[3], 0xb8);
    EXPECT_EQ(v6->net[4], 0);
    EXPECT_EQ(v6->net[15], 0);
}

TEST(ParseCidr, RejectsBadAddressesAndPrefixes) {
    EXPECT_FALSE(parse_cidr("10.0.0.0/33"));
    EXPECT_FALSE(parse_cidr("2001:db8::/129"));
    EXPECT_FALSE(parse_cidr("10.0.0/8"));
    EXPECT_FALSE(parse_cidr("10.0.0.0/"));
    EXPECT_FALSE(parse_cidr("example.com/8"));
}

TEST(ParseHostPort, ReadsNamesIpv4AndBracketedIpv6) {
    auto a = parse_host_port("0.0.0.0:8080");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "0.0.0.0");
    EXPECT_EQ(a->port, 8080);
    auto b = parse_host_port("[::1]:0");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->host, "::1");
    EXPECT_EQ(b->port, 0);
    EXPECT_EQ(parse_host_port("localhost:9090")->host, "localhost");
    EXPECT_FALSE(parse_host_port("::1:8080"));
    EXPECT_FALSE(parse_host_port("0.0.0.0"));
    EXPECT_FALSE(parse_host_port("0.0.0.0:65536"));
    EXPECT_FALSE(parse_host_port(":8080"));
    EXPECT_FALSE(parse_host_port("[nothost]:80"));
}

TEST(ParseHttpUrl, FillsSchemeHostPortAndBasePath) {
    auto a = parse_http_url("http://127.0.0.1:3000");
    ASSERT_TRUE(a);
    EXPECT_FALSE(a->tls);
    EXPECT_EQ(a->host, "127.0.0.1");
    EXPECT_EQ(a->port, 3000);
    EXPECT_EQ(a->base_path, "");
    auto b = parse_http_url("HTTPS://Shop.Internal/app/");
    ASSERT_TRUE(b);
    EXPECT_TRUE(b->tls);
    EXPECT_EQ(b->host, "shop.internal");
    EXPECT_EQ(b->port, 443);
    EXPECT_EQ(b->base_path, "/app");
    EXPECT_EQ(parse_http_url("http://[::1]/")->port, 80);
    EXPECT_FALSE(parse_http_url("ftp://host"));
    EXPECT_FALSE(parse_http_url("http://"));
    EXPECT_FALSE(parse_http_url("http://host:0"));
    EXPECT_FALSE(parse_http_url("http://user@host"));
    EXPECT_FALSE(parse_http_url("http://host/?q=1"));
    EXPECT_FALSE(parse_http_url("127.0.0.1:3000"));
}

TEST(ParseHttpUrl, ReadsIpv6LiteralsAndKeepsPathEscapes) {
    auto a = parse_http_url("http://[::FFFF:7F00:1]:8080/a%20b/");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "::ffff:7f00:1");
    EXPECT_EQ(a->port, 8080);
    EXPECT_EQ(a->base_path, "/a%20b");
    EXPECT_EQ(http("http://h/@app").base_path, "/@app") << "'@' is a path character";
}

TEST(ParseHttpUrl, RefusesBadPortsHostsAndExtras) {
    for (const char* bad : {"http://host:99999999999999999999",
                            "http://host:65536",
                            "http://host:+80",
                            "http://host:-1",
                            "http://host: 80",
                            "http://host:",
                            "http://host:80x",
                            "http://host:x/y",
                            "http://host:8080x/y",
                            "http://[::1]x/",
                            "http://:80",
                            "http:///app",
                            "http:host",
                            "http://[::1",
                            "http://::1/",
                            "http://[v1.x]/",
                            "http://[fe80::1%25eth0]/",
                            "http://h%41/",
                            "http://a b/",
                            "http://h/a b",
                            "http://h/a%zz",
                            "http://user:pw@host",
                            "http://@host",
                            "http://a@b@host/",
                            "http://host?",
                            "http://host/#f"}) {
        EXPECT_FALSE(parse_http_url(bad)) << bad;
    }
    EXPECT_FALSE(parse_http_url(std::string_view("http://host\0/", 13)));
}

TEST(ParseRedisUrl, ReadsCredentialsHostPortAndDatabase) {
    auto a = parse_redis_url("redis://user:pw@10.0.0.10:6380/2");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->username, "user");
    EXPECT_EQ(a->password, "pw");
    EXPECT_EQ(a->host, "10.0.0.10");
    EXPECT_EQ(a->port, 6380);
    EXPECT_EQ(a->db, 2u);
    auto b = parse_redis_url("redis://localhost");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->port, 6379);
    EXPECT_EQ(b->db, 0u);
    EXPECT_FALSE(parse_redis_url("http://localhost"));
    EXPECT_FALSE(parse_redis_url("redis://localhost/db"));
}

TEST(ParseRedisUrl, PercentDecodesUserAndPassword) {
    auto a = parse_redis_url("redis://us%40er:p%3Ass@host:6379/2");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->username, "us@er");
    EXPECT_EQ(a->password, "p:ss");
    EXPECT_EQ(a->host, "host");
    EXPECT_EQ(a->port, 6379);
    EXPECT_EQ(a->db, 2u);
    EXPECT_EQ(redis("redis://:a%2Fb%3Fc%23d%25e@h").password, "a/b?c#d%e");
    EXPECT_EQ(redis("redis://u:p:ss@h").password, "p:ss") << "the first ':' splits";
    auto alone = parse_redis_url("redis://s%40cret@h");
    ASSERT_TRUE(alone);
    EXPECT_EQ(alone->username, "");
    EXPECT_EQ(alone->password, "s@cret") << "user info without ':' is the password";
    auto empty = parse_redis_url("redis://@h");
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->password, "");
    // Binary-safe all the way: AUTH goes out with argument lengths.
    EXPECT_EQ(redis("redis://u:p%00w@h").password, std::string("p\0w", 3));
    EXPECT_FALSE(parse_redis_url("redis://u:p%zz@h"));
    EXPECT_FALSE(parse_redis_url("redis://u:p%4@h"));
}

TEST(ParseRedisUrl, RefusesRawDelimitersInUserInfo) {
    // Read by RFC 3986 these would put the host or the database somewhere in the password; an
    // operator writes them escaped instead.
    for (const char* bad : {"redis://u:a@b@h:1/2", "redis://u:a@b@h", "redis://u:x/y@h/3",
                            "redis://u:p?q@h", "redis://u:p#q@h", "redis://u:p q@h"}) {
        EXPECT_FALSE(parse_redis_url(bad)) << bad;
    }
}

TEST(ParseRedisUrl, ReadsIpv6LiteralsAndRefusesBadPortsAndHosts) {
    auto v6 = parse_redis_url("redis://[::1]:6380/1");
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(v6->port, 6380);
    EXPECT_EQ(v6->db, 1u);
    EXPECT_EQ(redis("redis://h:0080").port, 80);
    for (const char* bad : {"redis://h:99999999999999999999",
                            "redis://h:65536",
                            "redis://h:0",
                            "redis://h:+80",
                            "redis://h:-1",
                            "redis://h: 80",
                            "redis://h:",
                            "redis://h:80x",
                            "redis://h:6379%31",
                            "redis://h:63x79/0",
                            "redis://h:6379:1",
                            "redis://:6379",
                            "redis://",
                            "redis:///0",
                            "redis:h",
                            "redis://[::1",
                            "redis://::1/",
                            "redis://[v1.x]/",
                            "redis://[fe80::1%25eth0]/",
                            "redis://h%41/",
                            "redis://h_!/",
                            "rediss://h",
                            "redis+sentinel://h"}) {
        EXPECT_FALSE(parse_redis_url(bad)) << bad;
    }
}

TEST(ParseRedisUrl, RefusesQueriesFragmentsAndBadDatabases) {
    EXPECT_EQ(redis("redis://h/").db, 0u);
    EXPECT_EQ(redis("redis://h/99999").db, 99999u);
    for (const char* bad :
         {"redis://h/0?timeout=1", "redis://h?db=1", "redis://h/?", "redis://h/0#x", "redis://h#",
          "redis://h/-1", "redis://h/+1", "redis://h/1/", "redis://h//", "redis://h/%31",
          "redis://h/100000", "redis://h/99999999999999999999", "redis://h/ 1"}) {
        EXPECT_FALSE(parse_redis_url(bad)) << bad;
    }
}

TEST(ParseAuthority, ReadsAHostHeaderWithOrWithoutPort) {
    EXPECT_EQ(parse_authority("Admin.Internal")->host, "Admin.Internal");
    EXPECT_EQ(parse_authority("Admin.Internal")->port, 0);
    EXPECT_EQ(parse_authority("127.0.0.1:9090")->port, 9090);
    EXPECT_EQ(parse_authority("[::1]")->host, "::1");
    EXPECT_EQ(parse_authority("[::1]:9090")->port, 9090);
    EXPECT_FALSE(parse_authority(""));
    EXPECT_FALSE(parse_authority("::1"));
    EXPECT_FALSE(parse_authority("a b"));
    EXPECT_FALSE(parse_authority("host:port"));
    EXPECT_FALSE(parse_authority("user@host"));
}

TEST(IsLoopbackHost, KnowsLoopbackLiteralsAndLocalhostOnly) {
    for (const char* yes :
         {"127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1", "localhost", "LocalHost"}) {
        EXPECT_TRUE(is_loopback_host(yes)) << yes;
    }
    for (const char* no :
         {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "127.1", "127.0.0.1.nip.io",
          "localhost.evil.test", "evil.localhost.test", "::ffff:10.0.0.1", "", "[::1]"}) {
        EXPECT_FALSE(is_loopback_host(no)) << no;
    }
}

TEST(RedactUrl, HidesThePasswordAndKeepsTheRest) {
    EXPECT_EQ(redact_url("redis://user:pw@10.0.0.10:6380/2"), "redis://user:***@10.0.0.10:6380/2");
    EXPECT_EQ(redact_url("redis://:pw@db"), "redis://:***@db");
    EXPECT_EQ(redact_url("redis://s3cret@db/1"), "redis://***@db/1") << "user info = password";
    EXPECT_EQ(redact_url("redis://u:p/a?s#s@w@db:1/0"), "redis://u:***@db:1/0");
    EXPECT_EQ(redact_url("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
    EXPECT_EQ(redact_url("not a url"), "not a url");
    EXPECT_EQ(redact_url("redis://us%40er:p%3Ass@h:1/2"), "redis://us%40er:***@h:1/2");
    EXPECT_EQ(redact_url("redis://s%40cret@h/1"), "redis://***@h/1");
    // What parse_redis_url reads as the password, decoded or as written, never survives.
    for (std::string_view url :
         {"redis://user:pw@h", "redis://pw@h", "redis://u:a%40b@h:1/2", "redis://u:x%2Fy@h/3",
          "redis://u:%70%77%21@h", "redis://%73ecret%40@h"}) {
        auto parsed = parse_redis_url(url);
        ASSERT_TRUE(parsed) << url;
        std::string redacted = redact_url(url);
        EXPECT_EQ(redacted.find(parsed->password), std::string::npos) << url;
        auto userinfo = url.substr(8, url.rfind('@') - 8);
        auto written = userinfo.substr(userinfo.find(':') + 1);  // the whole of it without ':'
        EXPECT_EQ(redacted.find(written), std::string::npos) << url;
    }
}

TEST(Slug, LowercasesAndJoinsWordsWithDashes) {
    EXPECT_EQ(slug("Demo shop"), "demo-shop");
    EXPECT_EQ(slug("  Shop -- Checkout!! 2026 "), "shop-checkout-2026");
    EXPECT_EQ(slug("Café"), "caf");
    EXPECT_EQ(slug("!!!"), "");
}

}  // namespace
}  // namespace waitroom::config
