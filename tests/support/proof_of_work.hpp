#pragma once
// Proof of work for tests (rooms[].challenge), computed with OpenSSL's SHA-256 directly, not with
// the gateway's checker: the zero bits at the head of SHA-256(text), and the first candidate
// (`prefix` + a counter) that solves a seed by brute force.

#include <openssl/sha.h>

#include <string>

namespace waitroom::test {

inline unsigned sha256_zero_bits(const std::string& text) {
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d);
    unsigned bits = 0;
    for (unsigned char byte : d) {
        for (int b = 7; b >= 0; --b) {
            if ((byte >> b) & 1) {
                return bits;
            }
            ++bits;
        }
    }
    return bits;
}

// The first `prefix`N (N = 0, 1, …) whose SHA-256 after `seed` has at least (`solves`) or fewer
// than (`!solves`) `bits` zero bits.
inline std::string brute_force(const std::string& seed, unsigned bits, const std::string& prefix,
                               bool solves = true) {
    for (unsigned long n = 0;; ++n) {
        std::string s = prefix + std::to_string(n);
        if ((sha256_zero_bits(seed + s) >= bits) == solves) {
            return s;
        }
    }
}

}  // namespace waitroom::test
