// libFuzzer entry point for the PROXY protocol header parser (v1 and v2): any bytes, read as the
// first bytes of a connection on a `proxy_protocol: true` listener. Nothing may crash, the
// verdict stays within its bounds, and it is the same however the bytes arrive: the session
// calls parse() again on the whole buffer after every read, so a prefix of the input may only
// say need_more, or already give the verdict the whole input gives.
// Built by tests/fuzz/run.sh with clang; also replayed by proxy_protocol_fuzz_replay under g++.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy_protocol.hpp"

namespace {

namespace pp = waitroom::gateway::proxy_protocol;

bool same(const pp::result& a, const pp::result& b) {
    return a.what == b.what && a.size == b.size && a.has_source == b.has_source &&
           a.source == b.source && a.source_port == b.source_port;
}

void check_bounds(const pp::result& r, std::string_view bytes) {
    if (r.what == pp::status::done) {
        if (r.size == 0 || r.size > bytes.size() || r.size > pp::max_v2_size) {
            std::abort();
        }
        // A v1 header is a text line of at most 107 bytes ending in CRLF.
        if (bytes.front() == 'P' &&
            (r.size > pp::max_v1_size || bytes.substr(r.size - 2, 2) != "\r\n")) {
            std::abort();
        }
    }
    // Waiting for more is bounded: past the largest header there is a verdict.
    if (r.what == pp::status::need_more && bytes.size() >= pp::max_v2_size) {
        std::abort();
    }
    if (r.what != pp::status::done && (r.size != 0 || r.has_source)) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const pp::result whole = pp::parse(bytes);
    check_bounds(whole, bytes);
    // Every prefix: need_more, or the whole input's verdict (a header already complete, or
    // bytes already wrong, do not change with what follows). Only the first max_v2_size + 1
    // prefixes can differ from the whole.
    const std::size_t last = std::min(size, pp::max_v2_size + 1);
    for (std::size_t n = 0; n < last; ++n) {
        const pp::result part = pp::parse(bytes.substr(0, n));
        check_bounds(part, bytes.substr(0, n));
        if (part.what != pp::status::need_more && !same(part, whole)) {
            std::abort();
        }
    }
    return 0;
}
