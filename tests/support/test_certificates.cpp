#include "support/test_certificates.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>

namespace waitroom::test {

namespace {

void add_san(X509* cert, const std::vector<std::string>& names) {
    if (names.empty()) {
        return;
    }
    std::string value;
    for (const auto& n : names) {
        value += (value.empty() ? "DNS:" : ",DNS:") + n;
    }
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, value.c_str());
    if (ext == nullptr) {
        throw std::runtime_error("test certificate: bad SAN " + value);
    }
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
}

template <class Write>
void write_pem(const std::filesystem::path& path, Write write) {
    const auto tmp = path.string() + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr || write(f) != 1) {
        throw std::runtime_error("test certificate: cannot write " + tmp);
    }
    std::fclose(f);
    std::filesystem::rename(tmp, path);
}

}  // namespace

certificate_files write_self_signed(const std::filesystem::path& dir, const std::string& stem,
                                    const certificate_spec& spec) {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), spec.serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), static_cast<long>(spec.valid_for.count()));
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                               -1, 0);
    X509_set_issuer_name(cert, name);
    add_san(cert, spec.dns_names);
    X509_sign(cert, key, EVP_sha256());
    std::filesystem::create_directories(dir);
    certificate_files files{(dir / (stem + ".pem")).string(), (dir / (stem + ".key")).string()};
    write_pem(files.cert, [&](std::FILE* f) { return PEM_write_X509(f, cert); });
    write_pem(files.key, [&](std::FILE* f) {
        return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    });
    X509_free(cert);
    EVP_PKEY_free(key);
    return files;
}

}  // namespace waitroom::test
