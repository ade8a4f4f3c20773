#pragma once
// SHA-256 for the codec's small hashes (network tags, challenges). Private to src/cookie/.

#include <openssl/evp.h>

namespace waitroom::cookie::detail {

inline const EVP_MD* sha256() noexcept {
    // Fetched once: the implicit fetch behind EVP_sha256() costs more than the hash.
    static const EVP_MD* md = [] {
        const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
        return m != nullptr ? m : EVP_sha256();
    }();
    return md;
}

}  // namespace waitroom::cookie::detail
