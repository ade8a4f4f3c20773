#pragma once
// One TLS listener's certificates as loaded at one moment: an OpenSSL context per certificate
// (all with the listener's versions, ciphers and ALPN), and the SNI table that picks among them.
// Immutable once built. Sessions are created on the first (default) context; its servername
// callback moves a handshake to the context its name selects. A connection holds the set it
// started with for its whole life, which keeps every context the callbacks reach alive.

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "sni_table.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/gateway/listener_tls.hpp"

namespace waitroom::gateway {

// Why one certificate could not be loaded.
struct certificate_error {
    config::setting_place at;  // the cert or key setting of the file
    std::string file;
    std::string reason;

    // "key.path: file: reason"
    std::string to_string() const;
};

// One certificate loaded into its own context, or the reason it could not be.
struct loaded_certificate {
    std::unique_ptr<ssl::context> context;  // null on error
    certificate_info info;
    std::vector<std::string> names;  // SAN DNS names, or CN
    std::optional<certificate_error> error;
};

// Loads `cert` into a fresh server context with `tls`'s versions and ciphers.
loaded_certificate load_certificate(const config::tls_certificate& cert,
                                    const config::tls_settings& tls);

class certificate_set {
  public:
    struct build_result {
        std::shared_ptr<const certificate_set> set;  // null on error
        std::optional<certificate_error> error;      // the first certificate that failed
    };
    // Loads every certificate of `tls`; `alpn` is the protocols to offer, most preferred first.
    static build_result build(const config::tls_settings& tls,
                              const std::vector<std::string>& alpn);

    // The context a session is created on (the first certificate's).
    ssl::context& default_context() const { return *contexts_.front(); }
    const std::vector<certificate_info>& certificates() const { return info_; }

  private:
    certificate_set() = default;
    void install_callbacks(ssl::context& ctx, bool is_default);
    static int on_servername(SSL* ssl, int* alert, void* arg);
    static int on_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                       const unsigned char* in, unsigned int inlen, void* arg);

    std::vector<std::unique_ptr<ssl::context>> contexts_;  // by certificate index
    std::vector<certificate_info> info_;                   // same order
    sni_table sni_;
    std::string alpn_wire_;  // the offered protocols, length-prefixed as on the wire
};

}  // namespace waitroom::gateway
