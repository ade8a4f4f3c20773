#pragma once
// The certificates of a TLS listener, renewed without a restart. A listener's certificates form
// one immutable set (the OpenSSL contexts and the SNI table, src/gateway/certificate_set.hpp)
// held behind an atomic pointer that every worker's acceptor of that listener reads: a new
// connection starts with the current set and keeps it for its whole life, so a reload changes
// new handshakes only. Also what `waitroomd check` asks of the certificate files.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"

namespace waitroom::gateway {

class certificate_set;

// The ALPN protocols a listener offers, most preferred first.
std::vector<std::string> listener_alpn(const config::listener& l);

// One certificate as served.
struct certificate_info {
    std::string name;            // its first SAN DNS name, or its CN when it has no SAN
    std::string cert_file;       // the file it came from
    std::int64_t not_after = 0;  // unix time of notAfter
};

class listener_tls {
  public:
    // Loads every certificate of `cfg.tls`, which must be set. Throws std::runtime_error
    // ("key.path: file: reason") when one cannot be loaded: a start without them is refused.
    explicit listener_tls(const config::listener& cfg);

    // Loads every certificate of `cfg.tls` again, from the files as they are now, and makes
    // them current. On failure the current set stays and the reason is returned, naming the
    // file and its key path.
    std::optional<std::string> reload(const config::listener& cfg);

    // The set a new connection starts with.
    std::shared_ptr<const certificate_set> current() const {
        return current_.load(std::memory_order_acquire);
    }
    // The certificates of the current set, in the order configured.
    std::vector<certificate_info> certificates() const;

  private:
    std::atomic<std::shared_ptr<const certificate_set>> current_;
};

// What `check` found in one certificate or key file.
struct certificate_finding {
    config::problem problem;
    bool error = true;  // false: a warning (a certificate that expires soon)
};

// A certificate this close to its notAfter is warned about by `check`.
inline constexpr std::chrono::hours expiry_warning{14 * 24};

// Opens every certificate and key file of `cfg`'s TLS listeners: an unreadable file, a key that
// does not match its certificate or an expired certificate is an error; one that expires within
// expiry_warning of `now` is a warning.
std::vector<certificate_finding> check_certificates(const config::config& cfg,
                                                    std::chrono::system_clock::time_point now);

}  // namespace waitroom::gateway
