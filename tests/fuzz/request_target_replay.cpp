// Drives the request-target fuzz entry point under g++ (no libFuzzer there) over the bypass
// forms a visitor tries and over pseudo-random inputs, so the target stays compiled and its
// properties are checked in every build and in the sanitizer CI.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int run(const std::string& s) {
    return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

TEST(RequestTargetFuzzTarget, HoldsItsPropertiesOnTheKnownBypassForms) {
    const std::vector<std::string> targets = {
        "/shop/x",
        "//shop/x",
        "/./shop/x",
        "/x/../shop/x",
        "/%73hop/x",
        "/%2e/shop/x",
        "/shop;a/x",
        "/static/../shop/x",
        "/static/..;/shop/x",
        "http://a.test//shop/x",
        "shop/x",
        "/ADMIN/panel",
        "/%61dmin/Panel;x",
        "http://SHOP.example.com./x",
        "*",
        "/a%2fb",
        "/..",
        "/caf\xc3\xa9?q=\x01",
        "/a|b",
        "/%zz",
        "",
    };
    const std::vector<std::string> hosts = {
        "shop.example.com", "Shop.Example.Com.:80", "127.0.0.1", "[::1]", "", "a b"};
    for (int pick = 0; pick < 16; ++pick) {
        for (const auto& h : hosts) {
            for (const auto& t : targets) {
                EXPECT_EQ(run(std::string(1, static_cast<char>(pick)) + h + "\n" + t), 0);
            }
        }
    }
}

TEST(RequestTargetFuzzTarget, HoldsItsPropertiesOnPseudoRandomInputs) {
    // Bytes drawn mostly from the characters that matter to paths, so that the cases are not
    // all refused at the first byte.
    const std::string alphabet = "/./..;%2e%2F%5c%73?#\\:@aAsShop\n\x01\xc3 ";
    std::mt19937 rng(11);
    for (int i = 0; i < 20000; ++i) {
        std::string s(1, static_cast<char>(rng()));
        std::size_t n = rng() % 40;
        for (std::size_t j = 0; j < n; ++j) {
            s += alphabet[rng() % alphabet.size()];
        }
        EXPECT_EQ(run(s), 0);
    }
}

}  // namespace
