// Drives a libFuzzer entry point under g++ (no libFuzzer there): every input of the target's
// committed corpus (FUZZ_CORPUS_DIR), cut-down and bit-flipped variants of them, and
// pseudo-random bytes, so each fuzz target stays compiled and sane in every build and runs its
// corpus under the sanitizer CI. A target reports a broken property by aborting.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int run(const std::string& s) {
    return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::vector<std::string> corpus() {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(FUZZ_CORPUS_DIR)) {
        if (e.is_regular_file()) {
            files.push_back(e.path());
        }
    }
    std::sort(files.begin(), files.end());
    std::vector<std::string> out;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return out;
}

TEST(FuzzTarget, AcceptsEveryInputOfItsCommittedCorpus) {
    const auto inputs = corpus();
    ASSERT_FALSE(inputs.empty()) << "no seed in " << FUZZ_CORPUS_DIR;
    for (const auto& s : inputs) {
        EXPECT_EQ(run(s), 0);
    }
}

TEST(FuzzTarget, AcceptsCutAndFlippedVariantsOfItsCorpus) {
    std::mt19937 rng(11);
    for (const auto& s : corpus()) {
        for (int i = 0; i < 40; ++i) {
            std::string v = s.substr(0, s.empty() ? 0 : rng() % (s.size() + 1));
            for (int flips = 0; !v.empty() && flips < 3; ++flips) {
                v[rng() % v.size()] ^= static_cast<char>(1u << (rng() % 8));
            }
            EXPECT_EQ(run(v), 0);
        }
    }
}

TEST(FuzzTarget, AcceptsPseudoRandomInputs) {
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; ++i) {
        std::string s(rng() % 160, '\0');
        for (auto& c : s) {
            c = static_cast<char>(rng());
        }
        EXPECT_EQ(run(s), 0);
    }
}

}  // namespace
