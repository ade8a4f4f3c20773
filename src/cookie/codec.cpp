#include "waitroom/cookie/codec.hpp"

#include <pthread.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "base64.hpp"

namespace waitroom::cookie {
namespace {

constexpr std::size_t room_tag_size = 2;
constexpr std::size_t nonce_size = 12;
constexpr std::size_t gcm_tag_size = 16;
constexpr std::size_t header_size = room_tag_size + nonce_size;
// version, present-bits, 1-byte last_check_in and bucket delta, ticket.
constexpr std::size_t min_plaintext = 1 + 1 + 1 + 1 + 8;
// version, present-bits, five 10-byte varints, ticket, four 5-byte varints, network.
constexpr std::size_t max_plaintext = 1 + 1 + 5 * 10 + 8 + 4 * 5 + 4;
constexpr std::size_t max_blob = header_size + max_plaintext + gcm_tag_size;
constexpr std::size_t max_key_id = 8;
static_assert(max_key_id + 1 + (max_blob * 4 + 2) / 3 <= max_sealed_size);

constexpr std::uint8_t has_accepted = 1;
constexpr std::uint8_t has_event = 2;
constexpr std::uint8_t has_flags = 4;
constexpr std::uint8_t has_flood = 8;
constexpr std::uint8_t has_network = 16;
constexpr std::uint8_t has_estimate = 32;

constexpr char aad_domain[] = {'w', 'r', 'c', '1'};

// ---- cipher contexts -------------------------------------------------------------------------
// Each thread keeps its own EVP contexts with the key schedule already expanded, so a cookie
// costs one IV set-up and no lock. A context belongs to one ring (by serial); a thread that
// alternates between rings (a reload) keeps two sets.

struct ctx_deleter {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};
using ctx_ptr = std::unique_ptr<EVP_CIPHER_CTX, ctx_deleter>;

const EVP_CIPHER* aes_256_gcm() noexcept {
    // Fetched once: the implicit fetch behind EVP_aes_256_gcm() costs more than the cipher.
    static const EVP_CIPHER* cipher = [] {
        const EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
        return c != nullptr ? c : EVP_aes_256_gcm();
    }();
    return cipher;
}

struct ring_contexts {
    std::uint64_t serial = 0;
    ctx_ptr enc;               // the ring's first key, encrypting
    std::vector<ctx_ptr> dec;  // per key index, decrypting; made on first use
};

struct thread_contexts {
    std::array<ring_contexts, 2> slots;
    unsigned next = 0;

    ring_contexts& for_ring(const key_ring& ring) {
        for (auto& s : slots) {
            if (s.serial == ring.serial()) {
                return s;
            }
        }
        ring_contexts& s = slots[next];
        next = (next + 1) % slots.size();
        s.serial = ring.serial();
        s.enc.reset();
        s.dec.clear();
        s.dec.resize(ring.keys().size());
        return s;
    }
};

thread_local thread_contexts contexts;

ctx_ptr make_ctx(const key& k, bool encrypt) noexcept {
    ctx_ptr ctx{EVP_CIPHER_CTX_new()};
    if (!ctx) {
        return ctx;
    }
    int ok = encrypt
                 ? EVP_EncryptInit_ex2(ctx.get(), aes_256_gcm(), k.secret.data(), nullptr, nullptr)
                 : EVP_DecryptInit_ex2(ctx.get(), aes_256_gcm(), k.secret.data(), nullptr, nullptr);
    if (ok != 1) {
        ctx.reset();
    }
    return ctx;
}

EVP_CIPHER_CTX* encrypt_ctx(const key_ring& ring) noexcept {
    try {
        ring_contexts& rc = contexts.for_ring(ring);
        if (!rc.enc) {
            rc.enc = make_ctx(ring.encrypting_key(), true);
        }
        return rc.enc.get();
    } catch (...) {  // std::bad_alloc from the vector: report, never throw
        return nullptr;
    }
}

EVP_CIPHER_CTX* decrypt_ctx(const key_ring& ring, int index) noexcept {
    try {
        ring_contexts& rc = contexts.for_ring(ring);
        auto& slot = rc.dec[static_cast<std::size_t>(index)];
        if (!slot) {
            slot = make_ctx(ring.keys()[static_cast<std::size_t>(index)], false);
        }
        return slot.get();
    } catch (...) {
        return nullptr;
    }
}

// ---- nonces --------------------------------------------------------------------------------
// RAND_bytes costs about 2 µs per call in OpenSSL 3.0 whatever the size, which alone would
// break the 2 µs budget for issuing a cookie. So each thread draws nonces for many cookies at
// once. A forked child must never reuse its parent's unused nonces (GCM with a repeated nonce
// leaks the key stream), so a fork bumps a generation and every pool drawn before it is dropped.

std::atomic<std::uint64_t> fork_generation{0};

void on_fork_child() noexcept {
    fork_generation.fetch_add(1, std::memory_order_relaxed);
}

struct nonce_pool {
    static constexpr std::size_t count = 128;
    std::array<std::uint8_t, nonce_size * count> bytes{};
    std::size_t used = bytes.size();
    std::uint64_t generation = 0;

    bool next(std::uint8_t* out) noexcept {
        static const bool registered = ::pthread_atfork(nullptr, nullptr, on_fork_child) == 0;
        const std::uint64_t gen = fork_generation.load(std::memory_order_relaxed);
        if (used == bytes.size() || generation != gen || !registered) {
            if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
                used = bytes.size();
                return false;
            }
            used = 0;
            generation = gen;
        }
        std::memcpy(out, bytes.data() + used, nonce_size);
        used += nonce_size;
        return true;
    }
};

thread_local nonce_pool nonces;

// ---- associated data and room tag ----------------------------------------------------------

std::uint32_t fnv1a(std::string_view s) noexcept {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : s) {
        h ^= c;
        h *= 16777619u;
    }
    return h;
}

void write_room_tag(std::string_view room, std::uint8_t* out) noexcept {
    std::uint32_t h = fnv1a(room);
    out[0] = static_cast<std::uint8_t>(h >> 24);
    out[1] = static_cast<std::uint8_t>(h >> 16);
}

// Feeds "wrc1" | key id | 0x00 | room as AAD. `update` is EVP_EncryptUpdate or EVP_DecryptUpdate.
// A room id that fits goes in the same call as the rest: each call into the EVP layer costs
// several hundred instructions, as much as the whole AAD's hashing.
template <class Update>
bool feed_aad(EVP_CIPHER_CTX* ctx, Update update, std::string_view key_id,
              std::string_view room) noexcept {
    constexpr std::size_t room_inline = 64;
    std::uint8_t head[sizeof aad_domain + max_key_id + 1 + room_inline];
    std::memcpy(head, aad_domain, sizeof aad_domain);
    std::memcpy(head + sizeof aad_domain, key_id.data(), key_id.size());
    std::size_t head_size = sizeof aad_domain + key_id.size() + 1;
    head[head_size - 1] = 0;
    if (!room.empty() && room.size() <= room_inline) {
        std::memcpy(head + head_size, room.data(), room.size());
        head_size += room.size();
        room = {};
    }
    int len = 0;
    if (update(ctx, nullptr, &len, head, static_cast<int>(head_size)) != 1) {
        return false;
    }
    // Longer rooms: in chunks, so that no length overflows an int.
    while (!room.empty()) {
        std::size_t n = room.size() < (1u << 20) ? room.size() : (1u << 20);
        if (update(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(room.data()),
                   static_cast<int>(n)) != 1) {
            return false;
        }
        room.remove_prefix(n);
    }
    return true;
}

// ---- plaintext -----------------------------------------------------------------------------

std::uint64_t zigzag(std::int64_t v) noexcept {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

std::int64_t unzigzag(std::uint64_t u) noexcept {
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

// Wrapping difference: defined for any pair, and undone exactly by wrapping addition.
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) noexcept {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

std::size_t put_varint(std::uint8_t* out, std::uint64_t v) noexcept {
    std::size_t n = 0;
    while (v >= 0x80) {
        out[n++] = static_cast<std::uint8_t>(v | 0x80);
        v >>= 7;
    }
    out[n++] = static_cast<std::uint8_t>(v);
    return n;
}

struct reader {
    const std::uint8_t* p;
    const std::uint8_t* end;

    bool varint(std::uint64_t& v) noexcept {
        v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            if (p == end) {
                return false;
            }
            std::uint8_t b = *p++;
            if (shift == 63 && b > 1) {
                return false;
            }
            v |= std::uint64_t{static_cast<std::uint8_t>(b & 0x7F)} << shift;
            if ((b & 0x80) == 0) {
                // Only the shortest spelling is ours.
                return !(b == 0 && shift != 0);
            }
        }
        return false;
    }
    bool u32(std::uint32_t& v) noexcept {
        std::uint64_t w = 0;
        if (!varint(w) || w > 0xFFFFFFFFu) {
            return false;
        }
        v = static_cast<std::uint32_t>(w);
        return true;
    }
};

std::size_t write_plaintext(const payload& p, std::uint8_t* out) noexcept {
    std::size_t n = 0;
    out[n++] = format_version;
    std::uint8_t bits = (p.accepted_at != 0 ? has_accepted : 0) |
                        (p.event_id != 0 ? has_event : 0) | (p.flags != 0 ? has_flags : 0) |
                        (p.flood_since != 0 ? has_flood : 0) | (p.network != 0 ? has_network : 0) |
                        (p.estimate_shown_at != 0 ? has_estimate : 0);
    out[n++] = bits;
    n += put_varint(out + n, zigzag(p.last_check_in));
    n += put_varint(out + n, zigzag(wrap_sub(p.last_check_in, p.bucket)));
    if (bits & has_accepted) {
        n += put_varint(out + n, zigzag(wrap_sub(p.last_check_in, p.accepted_at)));
    }
    for (int i = 0; i < 8; ++i) {
        out[n++] = static_cast<std::uint8_t>(p.ticket >> (8 * i));
    }
    if (bits & has_event) {
        n += put_varint(out + n, p.event_id);
    }
    if (bits & has_flags) {
        n += put_varint(out + n, p.flags);
    }
    if (bits & has_flood) {
        n += put_varint(out + n, zigzag(wrap_sub(p.last_check_in, p.flood_since)));
        n += put_varint(out + n, p.flood_count);
    }
    if (bits & has_network) {
        for (int i = 0; i < 4; ++i) {
            out[n++] = static_cast<std::uint8_t>(p.network >> (8 * i));
        }
    }
    if (bits & has_estimate) {
        n += put_varint(out + n, zigzag(wrap_sub(p.last_check_in, p.estimate_shown_at)));
        n += put_varint(out + n, p.estimate_seconds);
    }
    return n;
}

bool read_plaintext(const std::uint8_t* data, std::size_t size, payload& p) noexcept {
    reader r{data, data + size};
    if (size < 2 || data[0] != format_version) {
        return false;
    }
    p.version = data[0];
    std::uint8_t bits = data[1];
    if ((bits & ~(has_accepted | has_event | has_flags | has_flood | has_network | has_estimate)) !=
        0) {
        return false;
    }
    r.p += 2;
    std::uint64_t v = 0;
    if (!r.varint(v)) {
        return false;
    }
    p.last_check_in = unzigzag(v);
    if (!r.varint(v)) {
        return false;
    }
    p.bucket = wrap_sub(p.last_check_in, unzigzag(v));
    p.accepted_at = 0;
    if (bits & has_accepted) {
        if (!r.varint(v)) {
            return false;
        }
        p.accepted_at = wrap_sub(p.last_check_in, unzigzag(v));
        if (p.accepted_at == 0) {
            return false;
        }
    }
    if (r.end - r.p < 8) {
        return false;
    }
    p.ticket = 0;
    for (int i = 0; i < 8; ++i) {
        p.ticket |= std::uint64_t{*r.p++} << (8 * i);
    }
    p.event_id = 0;
    if ((bits & has_event) && (!r.u32(p.event_id) || p.event_id == 0)) {
        return false;
    }
    p.flags = 0;
    if ((bits & has_flags) && (!r.u32(p.flags) || p.flags == 0)) {
        return false;
    }
    p.flood_since = 0;
    p.flood_count = 0;
    if (bits & has_flood) {
        if (!r.varint(v)) {
            return false;
        }
        p.flood_since = wrap_sub(p.last_check_in, unzigzag(v));
        if (p.flood_since == 0 || !r.u32(p.flood_count)) {
            return false;
        }
    }
    p.network = 0;
    if (bits & has_network) {
        if (r.end - r.p < 4) {
            return false;
        }
        for (int i = 0; i < 4; ++i) {
            p.network |= std::uint32_t{*r.p++} << (8 * i);
        }
        if (p.network == 0) {
            return false;
        }
    }
    p.estimate_shown_at = 0;
    p.estimate_seconds = 0;
    if (bits & has_estimate) {
        if (!r.varint(v)) {
            return false;
        }
        p.estimate_shown_at = wrap_sub(p.last_check_in, unzigzag(v));
        if (p.estimate_shown_at == 0 || !r.u32(p.estimate_seconds)) {
            return false;
        }
    }
    return r.p == r.end;
}


}  // namespace

result<std::size_t> encode_to(const key_ring& ring, const payload& p,
                              std::span<char, max_sealed_size> out) {
    const key& k = ring.encrypting_key();
    std::uint8_t plain[max_plaintext];
    const std::size_t plain_size = write_plaintext(p, plain);

    std::uint8_t blob[max_blob];
    write_room_tag(p.room, blob);
    std::uint8_t* nonce = blob + room_tag_size;
    std::uint8_t* cipher = blob + header_size;
    if (!nonces.next(nonce)) {
        return errc::crypto_failure;
    }
    EVP_CIPHER_CTX* ctx = encrypt_ctx(ring);
    if (ctx == nullptr) {
        return errc::crypto_failure;
    }
    int len = 0;
    int fin = 0;
    if (EVP_EncryptInit_ex2(ctx, nullptr, nullptr, nonce, nullptr) != 1 ||
        !feed_aad(ctx, EVP_EncryptUpdate, k.id, p.room) ||
        EVP_EncryptUpdate(ctx, cipher, &len, plain, static_cast<int>(plain_size)) != 1 ||
        EVP_EncryptFinal_ex(ctx, cipher + len, &fin) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(gcm_tag_size),
                            cipher + plain_size) != 1) {
        return errc::crypto_failure;
    }
    const std::size_t blob_size = header_size + plain_size + gcm_tag_size;
    const std::size_t size = k.id.size() + 1 + detail::base64url_size(blob_size);
    if (k.id.size() > max_key_id || size > out.size()) {
        return errc::crypto_failure;  // the key ring refuses such ids: never reached
    }
    std::memcpy(out.data(), k.id.data(), k.id.size());
    out[k.id.size()] = '.';
    detail::base64url_encode(blob, blob_size, out.data() + k.id.size() + 1);
    return size;
}

result<std::string> encode(const key_ring& ring, const payload& p) {
    std::array<char, max_sealed_size> buf;
    auto n = encode_to(ring, p, buf);
    if (!n) {
        return n.error();
    }
    try {
        return std::string(buf.data(), *n);
    } catch (...) {
        return errc::crypto_failure;
    }
}

result<payload> open(const key_ring& ring, std::string_view value, std::string_view room) {
    if (value.empty() || value.size() > max_value_size) {
        return errc::malformed;
    }
    const std::size_t dot = value.find('.');
    if (dot == std::string_view::npos) {
        return errc::malformed;
    }
    const std::string_view id = value.substr(0, dot);
    if (!valid_key_id(id)) {
        return errc::malformed;
    }
    std::uint8_t blob[max_blob];
    const long n = detail::base64_decode(value.substr(dot + 1), blob, sizeof blob, true);
    if (n < static_cast<long>(header_size + min_plaintext + gcm_tag_size)) {
        return errc::malformed;
    }
    const int index = ring.find(id);
    if (index < 0) {
        return errc::unknown_key;
    }
    std::uint8_t expected_tag[room_tag_size];
    write_room_tag(room, expected_tag);
    if (std::memcmp(expected_tag, blob, room_tag_size) != 0) {
        return errc::wrong_room;
    }

    EVP_CIPHER_CTX* ctx = decrypt_ctx(ring, index);
    if (ctx == nullptr) {
        return errc::crypto_failure;
    }
    const std::size_t cipher_size = static_cast<std::size_t>(n) - header_size - gcm_tag_size;
    const std::uint8_t* nonce = blob + room_tag_size;
    const std::uint8_t* cipher = blob + header_size;
    std::uint8_t plain[max_plaintext];
    int len = 0;
    int fin = 0;
    if (EVP_DecryptInit_ex2(ctx, nullptr, nullptr, nonce, nullptr) != 1 ||
        !feed_aad(ctx, EVP_DecryptUpdate, id, room) ||
        EVP_DecryptUpdate(ctx, plain, &len, cipher, static_cast<int>(cipher_size)) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(gcm_tag_size),
                            const_cast<std::uint8_t*>(cipher + cipher_size)) != 1) {
        return errc::crypto_failure;
    }
    if (EVP_DecryptFinal_ex(ctx, plain + len, &fin) != 1) {
        OPENSSL_cleanse(plain, sizeof plain);
        return errc::bad_auth;
    }
    result<payload> out{payload{}};
    payload& p = out.value();
    if (!read_plaintext(plain, cipher_size, p)) {
        return errc::malformed;
    }
    try {
        p.room.assign(room);
    } catch (...) {
        return errc::crypto_failure;
    }
    return out;
}

std::error_code check_age(const payload& p, util::sys_time now, std::chrono::milliseconds max_age,
                          std::chrono::milliseconds max_skew) noexcept {
    std::int64_t age = 0;
    if (__builtin_sub_overflow(util::unix_ms(now), p.last_check_in, &age)) {
        return errc::expired;  // centuries apart either way
    }
    if (age > max_age.count() || age < -max_skew.count()) {
        return errc::expired;
    }
    return {};
}

result<payload> decode(const key_ring& ring, std::string_view value, std::string_view room,
                       util::sys_time now, std::chrono::milliseconds max_age,
                       std::chrono::milliseconds max_skew) {
    result<payload> r = open(ring, value, room);
    if (!r) {
        return r;
    }
    if (auto ec = check_age(*r, now, max_age, max_skew)) {
        return ec;
    }
    return r;
}

std::string_view key_id_of(std::string_view value) noexcept {
    const std::size_t dot = value.find('.');
    if (dot == std::string_view::npos || !valid_key_id(value.substr(0, dot))) {
        return {};
    }
    return value.substr(0, dot);
}

}  // namespace waitroom::cookie
