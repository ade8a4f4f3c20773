#include "alpn.hpp"

namespace waitroom::gateway {

std::string_view chosen_alpn(const SSL* ssl) {
    const unsigned char* name = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(ssl, &name, &size);
    return name == nullptr ? std::string_view{}
                           : std::string_view(reinterpret_cast<const char*>(name), size);
}

}  // namespace waitroom::gateway
