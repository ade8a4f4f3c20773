#include "alpn.hpp"

namespace waitroom::gateway {

namespace {

// The wire form (length-prefixed names) of the offers, in the server's order of preference.
constexpr unsigned char with_h2[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char http11_only[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
    const bool http2 = arg != nullptr;
    const unsigned char* offers = http2 ? with_h2 : http11_only;
    const unsigned offers_size = http2 ? sizeof with_h2 : sizeof http11_only;
    // SSL_select_next_proto walks the client's list against ours; OPENSSL_NPN_NEGOTIATED means a
    // common protocol was found (it takes a non-const server list it never writes).
    if (SSL_select_next_proto(const_cast<unsigned char**>(out), outlen,
                              const_cast<unsigned char*>(offers), offers_size, in,
                              inlen) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    return SSL_TLSEXT_ERR_OK;
}

}  // namespace

void offer_alpn(SSL_CTX* ctx, bool http2) {
    // The argument only says whether h2 is offered: any non-null pointer means yes.
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn,
                               http2 ? const_cast<unsigned char*>(with_h2) : nullptr);
}

std::string_view chosen_alpn(const SSL* ssl) {
    const unsigned char* name = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(ssl, &name, &size);
    return name == nullptr ? std::string_view{}
                           : std::string_view(reinterpret_cast<const char*>(name), size);
}

}  // namespace waitroom::gateway
