#pragma once
// Which certificate of a TLS listener a ClientHello's server name selects: a name a certificate
// carries exactly, then a wildcard `*.example.com` (it stands for one label: a.example.com, not
// a.b.example.com nor example.com), else the first certificate, which is also the answer to a
// client that sends no name. Names compare case-insensitively. Built once per certificate set
// and read-only after, so a handshake on any worker reads it without a lock.

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace waitroom::gateway {

class sni_table {
  public:
    // The longest name DNS allows; a longer server name selects the default.
    static constexpr std::size_t max_name = 253;

    // The names (SAN DNS names, or CN) of certificate `index`. A name two certificates carry
    // stays with the one added first.
    void add(std::size_t index, const std::vector<std::string>& names);

    // The certificate for `server_name` ("" = none sent): 0 when no name matches.
    std::size_t select(std::string_view server_name) const;

  private:
    std::map<std::string, std::size_t, std::less<>> exact_;
    // "*.example.com" is kept as "example.com": the part a server name has past its first label.
    std::map<std::string, std::size_t, std::less<>> wildcard_;
};

}  // namespace waitroom::gateway
