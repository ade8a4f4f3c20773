#pragma once
// ALPN (RFC 7301) on a TLS listener: the protocols offered to clients, in the server's order of
// preference, and which one a handshake chose.

#include <openssl/ssl.h>

#include <string_view>

namespace waitroom::gateway {

// Offers "h2" (when `http2`) then "http/1.1" on `ctx`: a client that offers h2 gets it; one that
// offers neither gets no ALPN answer and speaks HTTP/1.1.
void offer_alpn(SSL_CTX* ctx, bool http2);

// The protocol the handshake of `ssl` chose ("" for none).
std::string_view chosen_alpn(const SSL* ssl);

}  // namespace waitroom::gateway
