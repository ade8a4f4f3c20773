#pragma once
// Which protocol a TLS handshake chose by ALPN (RFC 7301); the offers are the listener's
// (listener_alpn, certificate_set).

#include <openssl/ssl.h>

#include <string_view>

namespace waitroom::gateway {

// The protocol the handshake of `ssl` chose ("" for none: HTTP/1.1).
std::string_view chosen_alpn(const SSL* ssl);

}  // namespace waitroom::gateway
