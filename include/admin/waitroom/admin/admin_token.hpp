#pragma once
// The admin listener's access rules: the bearer token, loaded from `admin.token_file` or
// `admin.token_env` at start and on reload and checked in constant time on every admin request;
// and, for an API without a token, the Host names it answers to (DNS rebinding defence).

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::admin {

struct admin_token_load {
    std::optional<std::string> token;  // nullopt: none configured (the API is open)
    std::string error;                 // non-empty: the setting could not be read; names it
};

// Reads the configured token. Surrounding whitespace (a file's trailing newline) is dropped; an
// empty token, a missing file, a file open to its group or others (config::read_secret_file) or
// an unset variable is an error, never an open API.
admin_token_load load_admin_token(const config::admin_settings& settings);

// A token kept as its SHA-256 digest, so a check costs the same whatever the presented length.
class admin_token {
  public:
    explicit admin_token(std::string_view token);
    // Constant time in the token's contents (CRYPTO_memcmp over the digests).
    bool matches(std::string_view presented) const;

  private:
    std::array<unsigned char, 32> digest_{};
};

// What every admin request is checked against; swapped whole on reload.
struct admin_access {
    std::optional<admin_token> token;        // none: the API is open and Host is checked
    std::vector<std::string> allowed_hosts;  // admin.allowed_hosts (lowercase, no port)

    // Rules no request passes: a token of random bytes that no one was given.
    static std::shared_ptr<const admin_access> refuse_all();
};

// For an API without a token: a web page can make a visitor's browser call it by pointing a
// name of its own at 127.0.0.1 (DNS rebinding), and that browser then sends the page's name as
// Host. True for a loopback literal (127.0.0.0/8, [::1]), `localhost`, or a name of `allowed`;
// any case, port ignored. False for an absent or malformed Host.
bool admin_host_allowed(std::string_view host_header, const std::vector<std::string>& allowed);

// Why an Authorization header was refused, if it was.
enum class admin_auth { ok, missing, malformed, wrong };

// Checks `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750 token68 syntax).
// `expected` null means no token is configured: everything is allowed.
admin_auth check_bearer(const admin_token* expected, std::string_view authorization,
                        bool header_present);

}  // namespace waitroom::admin
