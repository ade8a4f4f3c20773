#include "waitroom/admin/admin_token.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdlib>

#include "waitroom/config/secret_file.hpp"
#include "waitroom/config/values.hpp"

namespace waitroom::admin {

namespace {

std::string_view trim(std::string_view s) {
    constexpr std::string_view space = " \t\r\n";
    auto b = s.find_first_not_of(space);
    if (b == std::string_view::npos) {
        return {};
    }
    auto e = s.find_last_not_of(space);
    return s.substr(b, e - b + 1);
}

// RFC 6750 b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", then "=" padding.
bool is_token68(std::string_view s) {
    if (s.empty()) {
        return false;
    }
    std::size_t i = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
        if (!ok) {
            break;
        }
    }
    if (i == 0) {
        return false;
    }
    for (; i < s.size(); ++i) {
        if (s[i] != '=') {
            return false;
        }
    }
    return true;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
        char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
        if (x != y) {
            return false;
        }
    }
    return true;
}

std::array<unsigned char, 32> sha256(std::string_view s) {
    std::array<unsigned char, 32> d{};
    SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
    return d;
}

}  // namespace

admin_token_load load_admin_token(const config::admin_settings& settings) {
    admin_token_load out;
    std::string raw;
    std::string what;
    if (!settings.token_file.empty()) {
        what = "admin.token_file " + settings.token_file;
        std::string why;
        if (!config::read_secret_file(settings.token_file, raw, why)) {
            out.error = "admin.token_file: " + why;
            return out;
        }
    } else if (!settings.token_env.empty()) {
        what = "admin.token_env " + settings.token_env;
        const char* v = std::getenv(settings.token_env.c_str());
        if (v == nullptr) {
            out.error = what + ": the variable is not set";
            return out;
        }
        raw = v;
    } else {
        return out;
    }
    auto t = trim(raw);
    if (t.empty()) {
        out.error = what + ": the token is empty";
        return out;
    }
    if (!is_token68(t)) {
        out.error = what + ": the token must be letters, digits and -._~+/ (RFC 6750)";
        return out;
    }
    out.token = std::string(t);
    return out;
}

admin_token::admin_token(std::string_view token) : digest_(sha256(token)) {}

std::shared_ptr<const admin_access> admin_access::refuse_all() {
    static const auto refuse = [] {
        std::array<char, 32> secret{};
        if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()),
                       static_cast<int>(secret.size())) != 1) {
            std::abort();  // no randomness: nothing here would be safe
        }
        auto a = std::make_shared<admin_access>();
        a->token.emplace(std::string_view(secret.data(), secret.size()));
        return std::shared_ptr<const admin_access>(std::move(a));
    }();
    return refuse;
}

bool admin_token::matches(std::string_view presented) const {
    auto d = sha256(presented);
    return CRYPTO_memcmp(d.data(), digest_.data(), d.size()) == 0;
}

bool admin_host_allowed(std::string_view host_header, const std::vector<std::string>& allowed) {
    auto authority = config::parse_authority(trim(host_header));
    if (!authority) {
        return false;
    }
    if (config::is_loopback_host(authority->host)) {
        return true;
    }
    for (const auto& name : allowed) {
        if (iequals(authority->host, name)) {
            return true;
        }
    }
    return false;
}

admin_auth check_bearer(const admin_token* expected, std::string_view authorization,
                        bool header_present) {
    if (expected == nullptr) {
        return admin_auth::ok;
    }
    if (!header_present) {
        return admin_auth::missing;
    }
    auto v = trim(authorization);
    auto sp = v.find(' ');
    if (sp == std::string_view::npos || !iequals(v.substr(0, sp), "bearer")) {
        return admin_auth::malformed;
    }
    auto credentials = trim(v.substr(sp + 1));
    if (!is_token68(credentials)) {
        return admin_auth::malformed;
    }
    return expected->matches(credentials) ? admin_auth::ok : admin_auth::wrong;
}

}  // namespace waitroom::admin
