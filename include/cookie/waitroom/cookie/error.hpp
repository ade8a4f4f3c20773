#pragma once
// Why a cookie was refused, as an error_code of our own category, and the small expected-style
// result the codec returns instead of throwing (the codec runs on the request path).

#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace waitroom::cookie {

enum class errc {
    malformed = 1,   // not a cookie of ours: bad syntax, bad base64url, wrong length, bad payload
    bad_auth,        // the GCM tag does not verify: forged, altered or truncated
    unknown_key,     // the key id is not in the key ring (rotated out, or another deployment)
    wrong_room,      // an authentic-looking cookie issued for another room
    expired,         // last check-in older than the allowed age, or too far in the future
    crypto_failure,  // OpenSSL itself failed (no randomness, allocation); never the visitor's fault
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

// A value or the reason there is none. `value()` is only meaningful when `ok()`.
template <class T>
class result {
  public:
    result(T value) : value_(std::move(value)) {}
    result(std::error_code ec) : error_(ec) {}
    result(errc e) : error_(make_error_code(e)) {}

    bool ok() const noexcept { return !error_; }
    explicit operator bool() const noexcept { return ok(); }
    std::error_code error() const noexcept { return error_; }

    const T& value() const& noexcept { return value_; }
    T& value() & noexcept { return value_; }
    T&& value() && noexcept { return std::move(value_); }
    const T& operator*() const& noexcept { return value_; }
    const T* operator->() const noexcept { return &value_; }

  private:
    T value_{};
    std::error_code error_;
};

}  // namespace waitroom::cookie

template <>
struct std::is_error_code_enum<waitroom::cookie::errc> : std::true_type {};
