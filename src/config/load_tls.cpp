// The `tls` mapping of a listener: one certificate (`cert`, `key`) or several
// (`certificates`), the lowest version and the TLS 1.2 ciphers. The cipher list is checked
// by OpenSSL here, so that `check`, the start and a reload refuse the same strings.

#include <openssl/ssl.h>

#include <memory>

#include "load_sections.hpp"

namespace waitroom::config::detail {

namespace {

setting_place place_of(const YAML::Node& n, std::string path) {
    setting_place p;
    p.path = std::move(path);
    const YAML::Mark m = n.Mark();
    if (!m.is_null()) {
        p.line = m.line + 1;
        p.column = m.column + 1;
    }
    return p;
}

// Whether OpenSSL knows at least one TLS 1.2 cipher in `list` (it skips unknown names, as
// nginx's ssl_ciphers does, but refuses a list that selects none).
bool ciphers_valid(const std::string& list) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                          &SSL_CTX_free);
    return ctx && SSL_CTX_set_cipher_list(ctx.get(), list.c_str()) == 1;
}

// `cert` and `key` of `f`, the mapping `n`: an item of `certificates`, or `tls` itself.
void read_certificate(loader& l, const YAML::Node& n, const fields& f, tls_certificate& out) {
    for (auto key : {"cert", "key"}) {
        if (!f.get(key)) {
            l.report(n, f.at(key), "is required (a PEM file)");
        }
    }
    l.set_path(f, "cert", out.cert);
    l.set_path(f, "key", out.key);
    if (auto c = f.get("cert")) {
        out.cert_at = place_of(*c, f.at("cert"));
    }
    if (auto k = f.get("key")) {
        out.key_at = place_of(*k, f.at("key"));
    }
}

void read_certificate_list(loader& l, const YAML::Node& n, const std::string& path,
                           tls_settings& out) {
    if (!n.IsSequence() || n.size() == 0) {
        l.report(n, path, "must list at least one {cert, key}");
        return;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        fields f(l, item, path + "[" + std::to_string(i) + "]", {"cert", "key"});
        if (!f.ok()) {
            continue;
        }
        out.certificates.emplace_back();
        read_certificate(l, item, f, out.certificates.back());
    }
}

void read_tls_options(loader& l, const fields& f, tls_settings& out) {
    if (auto v = f.get("min_version")) {
        if (auto m =
                l.choice<tls_version>(*v, f.at("min_version"),
                                      {{"1.2", tls_version::v1_2}, {"1.3", tls_version::v1_3}})) {
            out.min_version = *m;
        }
    }
    if (auto v = f.get("ciphers")) {
        auto s = l.string(*v, f.at("ciphers"));
        if (s && (s->empty() || !ciphers_valid(*s))) {
            l.report(*v, f.at("ciphers"),
                     "must be an OpenSSL cipher list that names at least one TLS 1.2 cipher, "
                     "like ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256");
        } else if (s) {
            out.ciphers = *s;
        }
    }
}

}  // namespace

void read_listener_tls(loader& l, const YAML::Node& n, const std::string& path,
                       std::optional<tls_settings>& out) {
    fields f(l, n, path, {"cert", "key", "certificates", "min_version", "ciphers"});
    if (!f.ok()) {
        return;
    }
    if (n.IsNull()) {
        l.report(n, path, "needs cert and key, or certificates: [{cert, key}, ...]");
        return;
    }
    tls_settings settings;
    const bool single = f.get("cert") || f.get("key");
    if (auto list = f.get("certificates")) {
        if (single) {
            l.report(n, path, "give either cert and key, or certificates, not both");
            return;
        }
        read_certificate_list(l, *list, f.at("certificates"), settings);
    } else {
        settings.certificates.emplace_back();
        read_certificate(l, n, f, settings.certificates.back());
    }
    read_tls_options(l, f, settings);
    out = std::move(settings);
}

}  // namespace waitroom::config::detail
