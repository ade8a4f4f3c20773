#pragma once
// The AES-256 keys that seal admission cookies: the first key encrypts, every key decrypts, so
// keys rotate without logging anyone out. Built once at startup from `cookie` settings.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::cookie {

inline constexpr std::size_t key_size = 32;

struct key {
    std::string id;                               // 1-8 chars of [A-Za-z0-9_-], sent in clear
    std::array<std::uint8_t, key_size> secret{};  // raw AES-256 key
};

// Immutable once built; share it as `std::shared_ptr<const key_ring>`. Not copyable, so that
// secrets are not scattered around memory; the destructor wipes them.
class key_ring {
  public:
    // Throws std::invalid_argument when `keys` is empty, an id is invalid or ids repeat
    // (startup only).
    explicit key_ring(std::vector<key> keys);
    ~key_ring();
    key_ring(const key_ring&) = delete;
    key_ring& operator=(const key_ring&) = delete;

    const std::vector<key>& keys() const noexcept { return keys_; }
    const key& encrypting_key() const noexcept { return keys_.front(); }
    // Index of the key with this id, or -1.
    int find(std::string_view id) const noexcept;
    // Unique per ring built in this process: lets each thread cache cipher contexts per ring.
    std::uint64_t serial() const noexcept { return serial_; }
    // The secret derived from key `index` for hashing a visitor's network (cookie.bind), so that
    // the AES key itself serves one purpose only.
    const std::array<std::uint8_t, key_size>& network_secret(std::size_t index) const noexcept {
        return network_secrets_[index];
    }

  private:
    std::vector<key> keys_;
    std::vector<std::array<std::uint8_t, key_size>> network_secrets_;  // by key index
    std::uint64_t serial_;
};

// A key id as carried in clear in cookies: 1-8 characters of [A-Za-z0-9_-].
bool valid_key_id(std::string_view id) noexcept;

// The id given to the key generated into `cookie.key_file`.
inline constexpr std::string_view generated_key_id = "local";

struct key_ring_options {
    // With no configured keys, create `key_file` when it does not exist. The daemon does; the
    // `waitroomd cookie` debug command does not (it must never invent a key).
    bool create_key_file = true;
};

struct key_ring_result {
    std::shared_ptr<const key_ring> ring;  // null on error
    std::string error;                     // names the setting and what is wrong; no secrets

    bool ok() const noexcept { return ring != nullptr; }
};

// Builds the ring from `cookie.keys` (secret_file or secret_env, base64 of exactly 32 bytes),
// or, with no keys, from `cookie.key_file`, creating it (mode 0600) the first time. A key file
// open to its group or others is refused (config::read_secret_file).
key_ring_result load_key_ring(const config::cookie_settings& settings,
                              key_ring_options options = {});

// A fresh random key, base64 (standard alphabet, padded): what `waitroomd keygen` prints.
// Throws std::runtime_error if the system has no randomness (startup / CLI only).
std::string generate_key_base64();

// Parses key material as written in a key file or variable: base64 (standard or url alphabet,
// padding optional, surrounding whitespace ignored) of exactly 32 bytes. On failure returns
// false and says why in `why` (never echoing the material).
bool parse_key_base64(std::string_view text, std::array<std::uint8_t, key_size>& out,
                      std::string& why);

}  // namespace waitroom::cookie
