#pragma once
// Throwaway self-signed certificates for TLS tests, written as PEM files: names (CN and SAN DNS
// names) and validity chosen per test, so that SNI, renewal and expiry can each be exercised.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace waitroom::test {

struct certificate_spec {
    std::string common_name = "localhost";
    std::vector<std::string> dns_names;                      // SAN DNS names; none = no SAN
    std::chrono::seconds valid_for = std::chrono::hours{1};  // notAfter - now; may be negative
    long serial = 1;
};

struct certificate_files {
    std::string cert;  // PEM certificate
    std::string key;   // PEM private key (EC P-256, unencrypted)
};

// Writes `dir/stem.pem` and `dir/stem.key`. Each file is written under a temporary name and
// renamed into place, as certbot does, so a reader sees the old file or the new, never half.
certificate_files write_self_signed(const std::filesystem::path& dir, const std::string& stem,
                                    const certificate_spec& spec = {});

}  // namespace waitroom::test
