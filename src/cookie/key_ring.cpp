#include "waitroom/cookie/key_ring.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "base64.hpp"
#include "waitroom/config/secret_file.hpp"

namespace waitroom::cookie {
namespace {

std::atomic<std::uint64_t> next_serial{1};

// HMAC-SHA256(secret, label): a second secret per key for another use than AES (startup only).
std::array<std::uint8_t, key_size> derive(const key& k, std::string_view label) {
    std::array<std::uint8_t, key_size> out{};
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), k.secret.data(), static_cast<int>(k.secret.size()),
             reinterpret_cast<const unsigned char*>(label.data()), label.size(), out.data(),
             &len) == nullptr ||
        len != out.size()) {
        throw std::runtime_error("cannot derive from cookie key '" + k.id + "'");
    }
    return out;
}

std::string errno_text(int e) {
    return std::strerror(e);
}

// Creates `path` holding a fresh key without ever exposing a partial file: the key is written
// to a private temporary file that is then hard-linked into place. link() refuses to replace an
// existing file, so two processes starting together end up sharing whichever key won.
// Returns 1 created, 0 already existed, -1 error.
int create_key_file(const std::string& path, std::string& why) {
    std::string tmpl = path + ".tmp.XXXXXX";
    int fd = ::mkstemp(tmpl.data());
    if (fd < 0) {
        why = "cannot create " + path + ": " + errno_text(errno);
        return -1;
    }
    ::fchmod(fd, 0600);
    std::string text;
    try {
        text = generate_key_base64();
    } catch (const std::exception& e) {
        ::close(fd);
        ::unlink(tmpl.c_str());
        why = e.what();
        return -1;
    }
    text.push_back('\n');
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
              ::fsync(fd) == 0;
    int write_errno = errno;
    OPENSSL_cleanse(text.data(), text.size());
    ::close(fd);
    if (!ok) {
        ::unlink(tmpl.c_str());
        why = "cannot write " + path + ": " + errno_text(write_errno);
        return -1;
    }
    int rc = ::link(tmpl.c_str(), path.c_str());
    int link_errno = errno;
    ::unlink(tmpl.c_str());
    if (rc == 0) {
        return 1;
    }
    if (link_errno == EEXIST) {
        return 0;
    }
    why = "cannot create " + path + ": " + errno_text(link_errno);
    return -1;
}

}  // namespace

key_ring::key_ring(std::vector<key> keys) : keys_(std::move(keys)), serial_(next_serial++) {
    if (keys_.empty()) {
        throw std::invalid_argument("cookie key ring needs at least one key");
    }
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        if (!valid_key_id(keys_[i].id)) {
            throw std::invalid_argument("cookie key id '" + keys_[i].id +
                                        "' must be 1-8 characters of [A-Za-z0-9_-]");
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (keys_[j].id == keys_[i].id) {
                throw std::invalid_argument("cookie key id '" + keys_[i].id + "' is repeated");
            }
        }
        network_secrets_.push_back(derive(keys_[i], "waitroom cookie network binding v1"));
    }
}

key_ring::~key_ring() {
    for (auto& k : keys_) {
        OPENSSL_cleanse(k.secret.data(), k.secret.size());
    }
    for (auto& s : network_secrets_) {
        OPENSSL_cleanse(s.data(), s.size());
    }
}

int key_ring::find(std::string_view id) const noexcept {
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        if (keys_[i].id == id) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

bool valid_key_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > 8) {
        return false;
    }
    for (char c : id) {
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

std::string generate_key_base64() {
    std::array<std::uint8_t, key_size> raw{};
    if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
        throw std::runtime_error("cannot generate a cookie key: no randomness available");
    }
    std::string out(detail::base64_std_size(raw.size()), '\0');
    detail::base64_std_encode(raw.data(), raw.size(), out.data());
    OPENSSL_cleanse(raw.data(), raw.size());
    return out;
}

bool parse_key_base64(std::string_view text, std::array<std::uint8_t, key_size>& out,
                      std::string& why) {
    auto is_space = [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    };
    while (!text.empty() && is_space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && is_space(text.back())) {
        text.remove_suffix(1);
    }
    if (text.empty()) {
        why = "is empty (expected base64 of 32 bytes, e.g. from `waitroomd keygen`)";
        return false;
    }
    std::uint8_t buf[96];
    long n = detail::base64_decode(text, buf, sizeof buf, false);
    if (n < 0) {
        // The decoder also refuses what would not fit, so tell the two apart by size.
        why = text.size() > 128 ? "is too long (expected base64 of 32 bytes)"
                                : "is not valid base64 (expected base64 of 32 bytes)";
        return false;
    }
    if (n != static_cast<long>(key_size)) {
        why = "must be base64 of exactly 32 bytes, got " + std::to_string(n) + " bytes";
        OPENSSL_cleanse(buf, sizeof buf);
        return false;
    }
    std::memcpy(out.data(), buf, key_size);
    OPENSSL_cleanse(buf, sizeof buf);
    return true;
}

key_ring_result load_key_ring(const config::cookie_settings& settings, key_ring_options options) {
    key_ring_result res;
    std::vector<key> keys;
    auto wipe = [&keys] {
        for (auto& k : keys) {
            OPENSSL_cleanse(k.secret.data(), k.secret.size());
        }
    };

    if (settings.keys.empty()) {
        const std::string& path = settings.key_file;
        if (path.empty()) {
            res.error = "cookie.key_file: no cookie.keys are configured and no key file is set";
            return res;
        }
        std::string why;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) {
            if (errno != ENOENT) {
                res.error = "cookie.key_file: cannot read " + path + ": " + errno_text(errno);
                return res;
            }
            if (!options.create_key_file) {
                res.error = "cookie.key_file: " + path +
                            " does not exist (it is created when waitroomd first starts)";
                return res;
            }
            if (create_key_file(path, why) < 0) {
                res.error = "cookie.key_file: " + why;
                return res;
            }
        }
        std::string text;
        if (!config::read_secret_file(path, text, why)) {
            res.error = "cookie.key_file: " + why;
            return res;
        }
        key k{std::string(generated_key_id), {}};
        bool ok = parse_key_base64(text, k.secret, why);
        OPENSSL_cleanse(text.data(), text.size());
        if (!ok) {
            res.error = "cookie.key_file: " + path + " " + why;
            return res;
        }
        keys.push_back(k);
        OPENSSL_cleanse(k.secret.data(), k.secret.size());
    } else {
        keys.reserve(settings.keys.size());
        for (std::size_t i = 0; i < settings.keys.size(); ++i) {
            const auto& ck = settings.keys[i];
            std::string where = "cookie.keys[" + std::to_string(i) + "]";
            if (!valid_key_id(ck.id)) {
                res.error = where + ".id: must be 1-8 characters of [A-Za-z0-9_-]";
                wipe();
                return res;
            }
            for (const auto& prev : keys) {
                if (prev.id == ck.id) {
                    res.error = where + ".id: '" + ck.id + "' is used by an earlier key";
                    wipe();
                    return res;
                }
            }
            if (ck.secret_file.empty() == ck.secret_env.empty()) {
                res.error = where + ": set exactly one of secret_file and secret_env";
                wipe();
                return res;
            }
            std::string text;
            std::string why;
            std::string source;
            if (!ck.secret_file.empty()) {
                source = where + ".secret_file: " + ck.secret_file;
                if (!config::read_secret_file(ck.secret_file, text, why)) {
                    res.error = where + ".secret_file: " + why;
                    wipe();
                    return res;
                }
            } else {
                source = where + ".secret_env: environment variable " + ck.secret_env;
                const char* v = std::getenv(ck.secret_env.c_str());
                if (v == nullptr) {
                    res.error = source + " is not set";
                    wipe();
                    return res;
                }
                text = v;
            }
            key k{ck.id, {}};
            bool ok = parse_key_base64(text, k.secret, why);
            OPENSSL_cleanse(text.data(), text.size());
            if (!ok) {
                res.error = source + " " + why;
                wipe();
                return res;
            }
            keys.push_back(k);
            OPENSSL_cleanse(k.secret.data(), k.secret.size());
        }
    }
    res.ring = std::make_shared<const key_ring>(std::move(keys));
    return res;
}

}  // namespace waitroom::cookie
