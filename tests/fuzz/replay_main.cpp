// Drives the libFuzzer entry point under g++ (no libFuzzer there) over fixed and pseudo-random
// inputs, so the fuzz target stays compiled and sane in every build and in the sanitizer CI.

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

TEST(CookieFuzzTarget, AcceptsSeedInputs) {
    const std::vector<std::string> seeds = {
        "",
        "k1.",
        "k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "a=1; _cfwaitingroom=\"k1.AAAA\"; _cfwaitingroom=k0.BBBB",
        std::string(5000, 'A'),
        std::string(64, '\0'),
        std::string(64, '\xff'),
    };
    for (const auto& s : seeds) {
        EXPECT_EQ(run(s), 0);
    }
}

TEST(CookieFuzzTarget, AcceptsPseudoRandomInputs) {
    std::mt19937 rng(7);
    for (int i = 0; i < 3000; ++i) {
        std::string s(rng() % 160, '\0');
        for (auto& c : s) {
            c = static_cast<char>(rng());
        }
        EXPECT_EQ(run(s), 0);
    }
}

}  // namespace
