// The challenge of proof of work on joining: its seed is the end of the sealed cookie, and a
// solution is a short string whose SHA-256 after the seed begins with enough zero bits.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/proof_of_work.hpp"
#include "waitroom/cookie/challenge.hpp"

namespace waitroom::cookie {
namespace {

using test::brute_force;

const std::string seed = "AbCdEfGhIjKlMnOpQrStUv";

TEST(Challenge, TheSeedIsTheEndOfTheSealedValue) {
    const std::string value = "k1.0123456789" + seed;
    EXPECT_EQ(challenge_seed(value), seed);
    EXPECT_EQ(challenge_seed(seed), seed);
    EXPECT_EQ(challenge_seed(seed.substr(1)), "") << "too short to be a cookie";
}

TEST(Challenge, ASolutionFoundByBruteForceSolvesAndOnlyAtItsDifficulty) {
    for (unsigned bits : {1u, 4u, 8u, 12u}) {
        const std::string s = brute_force(seed, bits, "");
        const unsigned actual = test::sha256_zero_bits(seed + s);
        EXPECT_TRUE(solves(seed, s, bits)) << bits;
        EXPECT_TRUE(solves(seed, s, actual));
        EXPECT_FALSE(solves(seed, s, actual + 1)) << "asks one bit more than it has";
        // Bound to the seed: the same solution under another cookie is (almost surely) none.
        std::string other = seed;
        other[0] = 'Z';
        if (test::sha256_zero_bits(other + s) < bits) {
            EXPECT_FALSE(solves(other, s, bits));
        }
    }
}

TEST(Challenge, MalformedSolutionsAndSeedsNeverSolve) {
    EXPECT_FALSE(solves(seed, "", 0)) << "empty";
    EXPECT_TRUE(solves(seed, "x", 0)) << "difficulty 0 takes any well-formed solution";
    EXPECT_FALSE(solves(seed, std::string(65, 'a'), 0)) << "longer than 64";
    EXPECT_TRUE(solves(seed, std::string(64, 'a'), 0));
    for (const std::string& bad :
         std::vector<std::string>{"a b", "a\r\n", std::string("a\0b", 3), "é", "a.b", "a/b"}) {
        EXPECT_FALSE(solves(seed, bad, 0)) << bad;
    }
    EXPECT_FALSE(solves(seed.substr(1), "x", 0)) << "a seed of the wrong length";
    EXPECT_FALSE(solves(seed, "x", 257)) << "more bits than a digest has";
}

TEST(Challenge, LeadingZeroBitsCountsAcrossBytes) {
    const unsigned char a[] = {0x00, 0x00, 0x01, 0xFF};
    const unsigned char b[] = {0x80};
    const unsigned char c[] = {0x00, 0x0F};
    const unsigned char z[] = {0x00, 0x00};
    EXPECT_EQ(leading_zero_bits(a, sizeof a), 23u);
    EXPECT_EQ(leading_zero_bits(b, sizeof b), 0u);
    EXPECT_EQ(leading_zero_bits(c, sizeof c), 12u);
    EXPECT_EQ(leading_zero_bits(z, sizeof z), 16u);
}

}  // namespace
}  // namespace waitroom::cookie
