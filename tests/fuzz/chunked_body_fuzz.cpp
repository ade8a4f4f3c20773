// libFuzzer entry point for the chunked request body: any bytes after a chunked POST head are
// decoded as the session decodes a client's body (head_parser into 16 KiB pieces, the rest kept
// in the read buffer). Nothing may crash or loop, the decoded body is never longer than the bytes
// sent, and a finished body is the same whether the bytes arrive at once or in small reads.
// Built by tests/fuzz/run.sh with clang; also replayed by chunked_body_fuzz_replay under g++.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>

#include "head_parser.hpp"

namespace {

using namespace waitroom::gateway;

constexpr std::string_view head =
    "POST /upload HTTP/1.1\r\nHost: shop.example\r\nTransfer-Encoding: chunked\r\n\r\n";
constexpr std::size_t piece_size = 16 * 1024;  // the session's body piece
constexpr std::uint64_t body_limit = 1 << 20;

struct outcome {
    bool done = false;  // the body (last chunk and trailers) is complete
    error_code ec;      // the parser's error, if any
    std::string body;   // the decoded bytes
};

outcome decode(std::string_view body, std::size_t step, request_head& h, char* piece) {
    head_parser<true> parser(h);
    parser.header_limit(16 * 1024);
    parser.body_limit(body_limit);
    outcome out;
    std::string pending(head);
    std::size_t fed = 0;
    for (;;) {
        // One read's worth of bytes parsed as Beast's read does: until need_more or a full piece.
        while (!pending.empty() && !parser.is_done()) {
            auto& b = parser.body();
            b.data = piece;
            b.size = piece_size;
            const std::size_t used =
                parser.put(boost::asio::buffer(pending.data(), pending.size()), out.ec);
            if (used > pending.size()) {
                std::abort();
            }
            pending.erase(0, used);
            out.body.append(piece, piece_size - parser.body().size);
            if (out.ec == http::error::need_buffer) {
                out.ec = {};
                continue;
            }
            if (out.ec == http::error::need_more) {
                out.ec = {};
                break;
            }
            if (out.ec) {
                return out;
            }
            if (used == 0) {
                break;  // nothing more to take from these bytes: the next read
            }
        }
        if (parser.is_done() || fed == body.size()) {
            break;
        }
        const std::size_t n = step == 0 ? body.size() : std::min(step, body.size() - fed);
        pending.append(body.substr(fed, n));
        fed += n;
    }
    out.done = parser.is_done();
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    static request_head h;
    static auto* piece = new char[piece_size];
    const outcome whole = decode(body, 0, h, piece);
    // Reads of 1 to 7 bytes cut every chunk line of a small input; a large one is cut in reads
    // of up to 97 bytes (still inside its chunk lines, at a fraction of the cost per input).
    const std::size_t step = size <= 1024 ? 1 + size % 7 : 1 + size % 97;
    const outcome split = decode(body, step, h, piece);
    // Beast may see a malformed chunk line sooner in one read than in several, so an unfinished
    // body agrees with anything; a finished one is the same however the bytes were cut, and
    // never an error the other way.
    if (whole.body.size() > size || split.body.size() > size ||
        (whole.done && split.done && whole.body != split.body) || (whole.done && split.ec) ||
        (split.done && whole.ec)) {
        std::abort();
    }
    return 0;
}
