// Loading a TLS listener's certificates into OpenSSL contexts, and the two callbacks that serve
// a handshake from them: the server name picks the certificate, ALPN picks the protocol.
#include "certificate_set.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace waitroom::gateway {

namespace {

// OpenSSL's reason for the last failure, and its error queue cleared for the next call.
std::string openssl_reason(std::string_view fallback) {
    const unsigned long e = ERR_peek_last_error();
    const char* reason = e != 0 ? ERR_reason_error_string(e) : nullptr;
    ERR_clear_error();
    return reason != nullptr ? std::string(fallback) + " (" + reason + ")" : std::string(fallback);
}

// A key file with a passphrase cannot be read by a daemon: refuse it rather than ask a terminal.
int no_passphrase(char*, int, int, void*) {
    return 0;
}

std::optional<std::string> unreadable(const std::string& file) {
    std::FILE* f = std::fopen(file.c_str(), "r");
    if (f == nullptr) {
        return std::string("cannot open: ") + std::strerror(errno);
    }
    std::fclose(f);
    return std::nullopt;
}

std::string asn1_text(const ASN1_STRING* s) {
    std::string out(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                    static_cast<std::size_t>(ASN1_STRING_length(s)));
    // A name with a NUL or a control character can match no server name; it is not a name.
    for (char c : out) {
        if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
            return {};
        }
    }
    return out;
}

// The SAN DNS names of `cert`, or its CN when it has no SAN DNS name.
std::vector<std::string> certificate_names(X509* cert) {
    std::vector<std::string> names;
    auto* sans =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
        if (gn->type == GEN_DNS) {
            if (auto n = asn1_text(gn->d.dNSName); !n.empty()) {
                names.push_back(std::move(n));
            }
        }
    }
    GENERAL_NAMES_free(sans);
    if (names.empty()) {
        X509_NAME* subject = X509_get_subject_name(cert);
        const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
        if (at >= 0) {
            if (auto n = asn1_text(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
                !n.empty()) {
                names.push_back(std::move(n));
            }
        }
    }
    return names;
}

std::int64_t not_after(const X509* cert) {
    std::tm tm{};
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) {
        return 0;
    }
    return static_cast<std::int64_t>(timegm(&tm));
}

void configure(ssl::context& ctx, const config::tls_settings& tls) {
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                    ssl::context::single_dh_use);
    SSL_CTX* native = ctx.native_handle();
    SSL_CTX_set_min_proto_version(
        native, tls.min_version == config::tls_version::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_dh_auto(native, 1);  // the DHE suites of the default list need parameters
    SSL_CTX_set_default_passwd_cb(native, &no_passphrase);
}

// Loads the files into `ctx`; the error names the setting the failing file came from.
std::optional<certificate_error> load_files(ssl::context& ctx, const config::tls_certificate& c,
                                            const config::tls_settings& tls) {
    SSL_CTX* native = ctx.native_handle();
    if (SSL_CTX_set_cipher_list(native, tls.ciphers.c_str()) != 1) {
        return certificate_error{c.cert_at, c.cert, openssl_reason("the cipher list selects none")};
    }
    if (auto why = unreadable(c.cert)) {
        return certificate_error{c.cert_at, c.cert, *why};
    }
    if (SSL_CTX_use_certificate_chain_file(native, c.cert.c_str()) != 1) {
        return certificate_error{c.cert_at, c.cert, openssl_reason("not a PEM certificate chain")};
    }
    if (auto why = unreadable(c.key)) {
        return certificate_error{c.key_at, c.key, *why};
    }
    const std::string mismatch = "does not match the certificate in " + c.cert;
    if (SSL_CTX_use_PrivateKey_file(native, c.key.c_str(), SSL_FILETYPE_PEM) != 1) {
        const unsigned long e = ERR_peek_last_error();
        const bool mismatched =
            ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
        return certificate_error{
            c.key_at, c.key,
            openssl_reason(mismatched ? mismatch : "not an unencrypted PEM private key")};
    }
    if (SSL_CTX_check_private_key(native) != 1) {
        return certificate_error{c.key_at, c.key,
                                 openssl_reason("does not match the certificate in " + c.cert)};
    }
    return std::nullopt;
}

}  // namespace

std::string certificate_error::to_string() const {
    return at.path + ": " + file + ": " + reason;
}

loaded_certificate load_certificate(const config::tls_certificate& cert,
                                    const config::tls_settings& tls) {
    loaded_certificate out;
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
    configure(*ctx, tls);
    if (auto e = load_files(*ctx, cert, tls)) {
        out.error = std::move(e);
        return out;
    }
    X509* leaf = SSL_CTX_get0_certificate(ctx->native_handle());
    out.names = certificate_names(leaf);
    out.info.name = out.names.empty() ? std::string{} : out.names.front();
    out.info.cert_file = cert.cert;
    out.info.not_after = not_after(leaf);
    out.context = std::move(ctx);
    return out;
}

certificate_set::build_result certificate_set::build(const config::tls_settings& tls,
                                                     const std::vector<std::string>& alpn) {
    std::shared_ptr<certificate_set> set(new certificate_set());
    for (const auto& p : alpn) {
        if (!p.empty() && p.size() <= 255) {
            set->alpn_wire_ += static_cast<char>(p.size());
            set->alpn_wire_ += p;
        }
    }
    for (std::size_t i = 0; i < tls.certificates.size(); ++i) {
        auto loaded = load_certificate(tls.certificates[i], tls);
        if (loaded.error) {
            return {nullptr, std::move(loaded.error)};
        }
        set->sni_.add(i, loaded.names);
        set->info_.push_back(std::move(loaded.info));
        set->contexts_.push_back(std::move(loaded.context));
    }
    if (set->contexts_.empty()) {
        return {nullptr, certificate_error{{"tls", 0, 0}, "", "lists no certificate"}};
    }
    for (std::size_t i = 0; i < set->contexts_.size(); ++i) {
        set->install_callbacks(*set->contexts_[i], i == 0);
    }
    return {std::move(set), std::nullopt};
}

void certificate_set::install_callbacks(ssl::context& ctx, bool is_default) {
    SSL_CTX* native = ctx.native_handle();
    // ALPN is answered from the context the server name selected: every context needs it.
    SSL_CTX_set_alpn_select_cb(native, &certificate_set::on_alpn, this);
    if (is_default) {
        SSL_CTX_set_tlsext_servername_callback(native, &certificate_set::on_servername);
        SSL_CTX_set_tlsext_servername_arg(native, this);
    }
}

int certificate_set::on_servername(SSL* ssl, int* alert, void* arg) {
    const auto* set = static_cast<const certificate_set*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    const std::size_t i = set->sni_.select(name != nullptr ? std::string_view(name) : "");
    if (i != 0 && SSL_set_SSL_CTX(ssl, set->contexts_[i]->native_handle()) == nullptr) {
        *alert = SSL_AD_INTERNAL_ERROR;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    return SSL_TLSEXT_ERR_OK;
}

int certificate_set::on_alpn(SSL*, const unsigned char** out, unsigned char* outlen,
                             const unsigned char* in, unsigned int inlen, void* arg) {
    const auto* set = static_cast<const certificate_set*>(arg);
    const auto& ours = set->alpn_wire_;
    unsigned char* chosen = nullptr;
    if (inlen == 0 || ours.empty() ||
        SSL_select_next_proto(&chosen, outlen, reinterpret_cast<const unsigned char*>(ours.data()),
                              static_cast<unsigned int>(ours.size()), in,
                              inlen) != OPENSSL_NPN_NEGOTIATED) {
        // No protocol in common: the handshake goes on without ALPN, as HTTP/1.1.
        return SSL_TLSEXT_ERR_NOACK;
    }
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

}  // namespace waitroom::gateway
