#pragma once
// Sealing and opening the admission cookie value: AES-256-GCM (OpenSSL), key id in clear, room
// bound as associated data. Runs on the request path: never throws, takes no lock.
//
// Value format (version 1), base64url without padding ("k1.AbC..."), typically ~75 characters:
//
//   <key id> "." base64url( room_tag[2] | nonce[12] | ciphertext | gcm_tag[16] )
//
//   room_tag    first 2 bytes (big endian) of the 32-bit FNV-1a hash of the room id. Not a
//               secret and not trusted: it only lets a cookie of another room be reported as
//               `wrong_room` before any decryption. A forged tag still fails authentication.
//   nonce       12 fresh random bytes per cookie (RAND_bytes).
//   AAD         "wrc1" | key id | 0x00 | room id — a cookie never verifies for another room
//               or under another key id.
//   plaintext   u8 version (1) | u8 present-bits | varint zigzag(last_check_in)
//               | varint zigzag(last_check_in - bucket) | [varint zigzag(last_check_in -
//               accepted_at)] | u64le ticket | [varint event_id] | [varint flags]
//               | [varint zigzag(last_check_in - flood_since) | varint flood_count]
//               | [u32le network]
//               | [varint zigzag(last_check_in - estimate_shown_at) | varint estimate_seconds]
//               present-bits: 1 = accepted_at != 0, 2 = event_id != 0, 4 = flags != 0,
//               8 = flood_since != 0, 16 = network != 0, 32 = estimate_shown_at != 0.
//               Times are unix milliseconds; the deltas keep a cookie short. A field that is
//               zero is left out, so a cookie of a room without abuse_action or cookie.bind is
//               byte for byte what it was before those existed, and a cookie without the
//               estimate (sealed before it existed, or an admitted visitor's) opens as one
//               whose estimate_shown_at is 0.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "waitroom/cookie/error.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/room/payload.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::cookie {

// Current payload format version; `encode` always writes it.
inline constexpr std::uint8_t format_version = 1;

// Longest value `decode` looks at; anything longer is `malformed` without further work.
inline constexpr std::size_t max_value_size = 256;

// How far in the future a last check-in may lie (clock skew between nodes) before the cookie
// counts as `expired`.
inline constexpr std::chrono::milliseconds default_max_clock_skew = std::chrono::seconds{60};

// Seals `p` (its `room` as associated data, its `version` ignored) with the ring's first key.
// Fails only with errc::crypto_failure.
result<std::string> encode(const key_ring& ring, const payload& p);

// Room for any value encode_to writes (a key id of at most 8 characters).
inline constexpr std::size_t max_sealed_size = 168;

// The same value as `encode`, written to `out` (no allocation: a new visitor's answer seals it
// straight into its head); returns its length.
result<std::size_t> encode_to(const key_ring& ring, const payload& p,
                              std::span<char, max_sealed_size> out);

// Opens a value for `room` and checks its age: `expired` when `now - last_check_in > max_age`
// or `last_check_in - now > max_skew`. Any input, however large or binary, gives a result.
result<payload> decode(const key_ring& ring, std::string_view value, std::string_view room,
                       util::sys_time now, std::chrono::milliseconds max_age,
                       std::chrono::milliseconds max_skew = default_max_clock_skew);

// Opens a value without any expiry check (the operator's debug command).
result<payload> open(const key_ring& ring, std::string_view value, std::string_view room);

// The expiry rule of `decode` on its own: errc::expired or an empty error_code.
std::error_code check_age(const payload& p, util::sys_time now, std::chrono::milliseconds max_age,
                          std::chrono::milliseconds max_skew = default_max_clock_skew) noexcept;

// The key id written in clear in a value ("" when there is none).
std::string_view key_id_of(std::string_view value) noexcept;

}  // namespace waitroom::cookie
