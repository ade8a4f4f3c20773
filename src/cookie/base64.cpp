#include "base64.hpp"

#include <array>

namespace waitroom::cookie::detail {
namespace {

constexpr char url_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr char std_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// 0-63: value; 64: '+' or '/' (standard only); 255: invalid.
constexpr std::array<std::uint8_t, 256> make_table() {
    std::array<std::uint8_t, 256> t{};
    for (auto& v : t) {
        v = 255;
    }
    for (int i = 0; i < 64; ++i) {
        t[static_cast<unsigned char>(url_alphabet[i])] = static_cast<std::uint8_t>(i);
    }
    t['+'] = 64;
    t['/'] = 65;
    return t;
}
constexpr auto table = make_table();

void encode_with(const char* alphabet, const std::uint8_t* in, std::size_t n, char* out) {
    std::size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        std::uint32_t v =
            (std::uint32_t{in[i]} << 16) | (std::uint32_t{in[i + 1]} << 8) | in[i + 2];
        *out++ = alphabet[(v >> 18) & 63];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = alphabet[(v >> 6) & 63];
        *out++ = alphabet[v & 63];
    }
    if (n - i == 1) {
        std::uint32_t v = std::uint32_t{in[i]} << 16;
        *out++ = alphabet[(v >> 18) & 63];
        *out++ = alphabet[(v >> 12) & 63];
    } else if (n - i == 2) {
        std::uint32_t v = (std::uint32_t{in[i]} << 16) | (std::uint32_t{in[i + 1]} << 8);
        *out++ = alphabet[(v >> 18) & 63];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = alphabet[(v >> 6) & 63];
    }
}

}  // namespace

void base64url_encode(const std::uint8_t* in, std::size_t n, char* out) noexcept {
    encode_with(url_alphabet, in, n, out);
}

void base64_std_encode(const std::uint8_t* in, std::size_t n, char* out) noexcept {
    encode_with(std_alphabet, in, n, out);
    std::size_t written = base64url_size(n);
    for (std::size_t i = written; i < base64_std_size(n); ++i) {
        out[i] = '=';
    }
}

long base64_decode(std::string_view in, std::uint8_t* out, std::size_t cap,
                   bool url_only) noexcept {
    if (!url_only && in.size() % 4 == 0 && !in.empty()) {
        // Strip a correct padding of one or two '='.
        if (in.back() == '=') {
            in.remove_suffix(1);
            if (in.back() == '=') {
                in.remove_suffix(1);
            }
        }
    }
    const std::size_t rem = in.size() % 4;
    if (rem == 1) {
        return -1;
    }
    const std::size_t n = in.size() / 4 * 3 + (rem == 0 ? 0 : rem - 1);
    if (n > cap) {
        return -1;
    }
    auto value = [&](char c, std::uint32_t& v) {
        std::uint8_t t = table[static_cast<unsigned char>(c)];
        if (t == 64 || t == 65) {
            if (url_only) {
                return false;
            }
            t = static_cast<std::uint8_t>(t - 2);  // '+' = 62, '/' = 63
        } else if (t == 255) {
            return false;
        }
        v = (v << 6) | t;
        return true;
    };
    std::size_t i = 0;
    std::size_t o = 0;
    for (; i + 4 <= in.size(); i += 4) {
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            if (!value(in[i + k], v)) {
                return -1;
            }
        }
        out[o++] = static_cast<std::uint8_t>(v >> 16);
        out[o++] = static_cast<std::uint8_t>(v >> 8);
        out[o++] = static_cast<std::uint8_t>(v);
    }
    if (rem != 0) {
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < rem; ++k) {
            if (!value(in[i + k], v)) {
                return -1;
            }
        }
        if (rem == 2) {
            if ((v & 0xF) != 0) {  // non-canonical: unused low bits set
                return -1;
            }
            out[o++] = static_cast<std::uint8_t>(v >> 4);
        } else {
            if ((v & 0x3) != 0) {
                return -1;
            }
            out[o++] = static_cast<std::uint8_t>(v >> 10);
            out[o++] = static_cast<std::uint8_t>(v >> 2);
        }
    }
    return static_cast<long>(o);
}

}  // namespace waitroom::cookie::detail
