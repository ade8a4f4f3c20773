// The SNI table: which certificate a ClientHello's server name selects.
#include "sni_table.hpp"

#include <gtest/gtest.h>

#include <string>

namespace waitroom::gateway {
namespace {

sni_table shop_and_api() {
    sni_table t;
    t.add(0, {"shop.example.com", "www.example.com"});
    t.add(1, {"api.example.com"});
    t.add(2, {"*.cdn.example.com", "*.example.org"});
    return t;
}

TEST(SniTable, SelectsTheCertificateThatCarriesTheExactName) {
    const auto t = shop_and_api();
    EXPECT_EQ(t.select("shop.example.com"), 0u);
    EXPECT_EQ(t.select("www.example.com"), 0u);
    EXPECT_EQ(t.select("api.example.com"), 1u);
}

TEST(SniTable, ComparesNamesWithoutRegardToCase) {
    const auto t = shop_and_api();
    EXPECT_EQ(t.select("API.Example.COM"), 1u);
    EXPECT_EQ(t.select("Img.CDN.example.com"), 2u);
}

TEST(SniTable, AWildcardStandsForExactlyOneLabel) {
    const auto t = shop_and_api();
    EXPECT_EQ(t.select("img.cdn.example.com"), 2u);
    EXPECT_EQ(t.select("a.example.org"), 2u);
    EXPECT_EQ(t.select("a.b.cdn.example.com"), 0u);
    EXPECT_EQ(t.select("cdn.example.com"), 0u);
    EXPECT_EQ(t.select("example.org"), 0u);
    EXPECT_EQ(t.select(".example.org"), 0u);
}

TEST(SniTable, AnExactNameWinsOverAWildcard) {
    sni_table t;
    t.add(0, {"default.test"});
    t.add(1, {"*.example.com"});
    t.add(2, {"api.example.com"});
    EXPECT_EQ(t.select("api.example.com"), 2u);
    EXPECT_EQ(t.select("www.example.com"), 1u);
}

TEST(SniTable, NoNameOrAnUnknownOneSelectsTheFirstCertificate) {
    const auto t = shop_and_api();
    EXPECT_EQ(t.select(""), 0u);
    EXPECT_EQ(t.select("unknown.test"), 0u);
    EXPECT_EQ(t.select("localhost"), 0u);
    EXPECT_EQ(t.select("com"), 0u);
}

TEST(SniTable, ANameTwoCertificatesCarryStaysWithTheFirst) {
    sni_table t;
    t.add(0, {"a.test"});
    t.add(1, {"b.test", "shared.test"});
    t.add(2, {"shared.test"});
    EXPECT_EQ(t.select("shared.test"), 1u);
}

TEST(SniTable, AnOverlongServerNameSelectsTheFirstCertificate) {
    sni_table t;
    const std::string long_name = std::string(300, 'a') + ".example.com";
    t.add(0, {"default.test"});
    t.add(1, {long_name, "*.example.com"});
    EXPECT_EQ(t.select(long_name), 0u);
    EXPECT_EQ(t.select(std::string(sni_table::max_name - 12, 'a') + ".example.com"), 1u);
}

}  // namespace
}  // namespace waitroom::gateway
