#pragma once
// Base64 for the cookie module. Ours rather than OpenSSL's EVP_EncodeBlock because cookies need
// the url alphabet without padding, and a strict decoder (canonical trailing bits) so that no
// two spellings of a value decode alike.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace waitroom::cookie::detail {

inline constexpr std::size_t base64url_size(std::size_t n) noexcept {
    return (n / 3) * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

// Writes base64url (no padding) of `in[0..n)` to `out`, which holds base64url_size(n) chars.
void base64url_encode(const std::uint8_t* in, std::size_t n, char* out) noexcept;

// Decodes `in` into `out` (capacity `cap`); returns the byte count or -1 if `in` is not the
// canonical unpadded spelling in the chosen alphabet(s) or does not fit.
// url_only: only '-' '_' for 62/63; otherwise '+' '/' are accepted too and a correct '='
// padding is allowed.
long base64_decode(std::string_view in, std::uint8_t* out, std::size_t cap, bool url_only) noexcept;

// Standard base64 with padding (key files, keygen).
void base64_std_encode(const std::uint8_t* in, std::size_t n, char* out) noexcept;
inline constexpr std::size_t base64_std_size(std::size_t n) noexcept {
    return (n + 2) / 3 * 4;
}

}  // namespace waitroom::cookie::detail
