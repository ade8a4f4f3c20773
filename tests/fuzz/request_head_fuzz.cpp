// libFuzzer entry point for the request head: any bytes, parsed as the session parses a client's
// head (head_parser, the configured header limit), then validated (request_problem) and, when
// valid, rewritten for the origin. Nothing may crash, and the head must parse the same whether
// the bytes arrive at once or in small reads.
// Built by tests/fuzz/run.sh with clang; also replayed by request_head_fuzz_replay under g++.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>

#include "forward_headers.hpp"
#include "head_parser.hpp"

namespace {

using namespace waitroom::gateway;

constexpr std::uint32_t header_limit = 16 * 1024;  // limits.max_header_bytes' default

struct outcome {
    bool done = false;         // the head is complete
    error_code ec;             // the parser's error, if any
    std::string_view problem;  // request_problem of a complete head
    std::string origin_head;   // what would be sent to the origin
};

// Feeds `text` in reads of `step` bytes (0: all at once), as the session does between reads:
// the unparsed rest stays in the buffer and the next read is appended to it.
outcome parse(std::string_view text, std::size_t step, request_head& head) {
    head_parser<true> parser(head);
    parser.header_limit(header_limit);
    outcome out;
    std::string pending;
    std::size_t fed = 0;
    while (!parser.is_header_done()) {
        const std::size_t n = step == 0 ? text.size() - fed : std::min(step, text.size() - fed);
        if (n == 0) {
            break;
        }
        pending.append(text.substr(fed, n));
        fed += n;
        while (!pending.empty() && !parser.is_header_done()) {
            const std::size_t used =
                parser.put(boost::asio::buffer(pending.data(), pending.size()), out.ec);
            if (used > pending.size()) {
                std::abort();
            }
            pending.erase(0, used);
            if (out.ec == http::error::need_more) {
                out.ec = {};
                break;
            }
            if (out.ec) {
                return out;
            }
        }
    }
    out.done = parser.is_header_done();
    if (!out.done) {
        return out;
    }
    out.problem = request_problem(head);
    if (out.problem.empty()) {
        (void)is_websocket_upgrade(head);
        forward_info fi;
        fi.client_ip = "192.0.2.7";
        fi.origin_host = "origin.internal:8080";
        fi.base_path = "/base";
        write_origin_request(head, out.origin_head, fi);
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    static request_head whole_head;
    static request_head split_head;
    const outcome whole = parse(text, 0, whole_head);
    const outcome split = parse(text, 1 + size % 13, split_head);
    // However the bytes are cut into reads, a head that completes gets the same verdict and
    // the same origin head; Beast may see a malformed head sooner in one read than in several,
    // so an unfinished parse agrees with anything, but never a parse error with a head.
    const bool whole_ok = whole.done && whole.problem.empty();
    const bool split_ok = split.done && split.problem.empty();
    if ((whole.done && split.done &&
         (whole.problem != split.problem || whole.origin_head != split.origin_head)) ||
        (whole_ok && split.ec) || (split_ok && whole.ec)) {
        std::abort();
    }
    // An accepted head never carries a line break or NUL into the origin's head lines.
    if (whole.done && whole.problem.empty()) {
        const std::string_view h = whole.origin_head;
        const auto end = h.find("\r\n\r\n");
        if (end == std::string_view::npos || end + 4 != h.size() ||
            h.substr(0, end).find('\0') != std::string_view::npos) {
            std::abort();
        }
        for (std::size_t i = 0; i < end; ++i) {
            if ((h[i] == '\r' && h[i + 1] != '\n') ||
                (h[i] == '\n' && (i == 0 || h[i - 1] != '\r'))) {
                std::abort();
            }
        }
    }
    return 0;
}
