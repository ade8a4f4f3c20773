#include "waitroom/cookie/network.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>

#include "sha256.hpp"

namespace waitroom::cookie {
namespace {

bool is_v4_mapped(const std::array<std::uint8_t, 16>& a) noexcept {
    static constexpr std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    return std::memcmp(a.data(), prefix, sizeof prefix) == 0;
}

}  // namespace

std::uint32_t network_tag(const key_ring& ring, std::size_t key_index,
                          const client_address& address) noexcept {
    const auto& secret = ring.network_secret(key_index);
    std::uint8_t in[key_size + 1 + 7];
    std::size_t n = 0;
    std::memcpy(in, secret.data(), secret.size());
    n += secret.size();
    if (!address) {
        in[n++] = 0;
    } else if (is_v4_mapped(*address)) {
        in[n++] = 4;
        std::memcpy(in + n, address->data() + 12, 3);  // the /24
        n += 3;
    } else {
        in[n++] = 6;
        std::memcpy(in + n, address->data(), 7);  // the /56
        n += 7;
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    std::uint32_t tag = 0;
    if (EVP_Digest(in, n, digest, &len, detail::sha256(), nullptr) == 1 && len >= 4) {
        for (int i = 0; i < 4; ++i) {
            tag |= std::uint32_t{digest[i]} << (8 * i);
        }
    }
    OPENSSL_cleanse(in, sizeof in);
    // A hash that failed (out of memory) gives 1, as a zero tag does: such a cookie is bound
    // weakly, never refused for it (a visitor is not sent to the back for our failure).
    return tag != 0 ? tag : 1;
}

}  // namespace waitroom::cookie
