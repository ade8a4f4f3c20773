#include "waitroom/cookie/challenge.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "sha256.hpp"

namespace waitroom::cookie {
namespace {

bool solution_char(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

}  // namespace

std::string_view challenge_seed(std::string_view sealed_value) noexcept {
    if (sealed_value.size() < challenge_seed_size) {
        return {};
    }
    return sealed_value.substr(sealed_value.size() - challenge_seed_size);
}

unsigned leading_zero_bits(const unsigned char* digest, std::size_t size) noexcept {
    unsigned bits = 0;
    for (std::size_t i = 0; i < size; ++i) {
        if (digest[i] != 0) {
            return bits + static_cast<unsigned>(std::countl_zero(digest[i]));
        }
        bits += 8;
    }
    return bits;
}

bool solves(std::string_view seed, std::string_view solution, unsigned difficulty) noexcept {
    if (seed.size() != challenge_seed_size || solution.empty() ||
        solution.size() > max_solution_size || difficulty > 256 ||
        !std::all_of(solution.begin(), solution.end(), solution_char)) {
        return false;
    }
    unsigned char in[challenge_seed_size + max_solution_size];
    std::memcpy(in, seed.data(), seed.size());
    std::memcpy(in + seed.size(), solution.data(), solution.size());
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(in, seed.size() + solution.size(), digest, &len, detail::sha256(), nullptr) !=
        1) {
        return false;
    }
    return leading_zero_bits(digest, len) >= difficulty;
}

}  // namespace waitroom::cookie
