// libFuzzer entry point for the HTTP/2 server codec: the client preface, then any bytes, fed to
// an h2_codec as a connection would (cut into reads whose size the first input byte picks),
// with every request answered and its body taken, and the output drained after each read.
// Besides "no crash, no leak, no hang":
//   - every request head the codec hands over is one HTTP/1.1 can carry: written as the origin
//     is sent it (write_origin_request), it parses back with the gateway's own head parser,
//     with no error, to the same method and a Host;
//   - that forwarded head routes as the request did: its target canonicalises to the same path
//     and query, and its Host to the same authority.
// Built by tests/fuzz/run.sh with clang; also replayed by h2_server_fuzz_replay under g++.

#include <boost/asio/buffer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "forward_headers.hpp"
#include "h2_codec.hpp"
#include "head_parser.hpp"
#include "waitroom/util/request_target.hpp"

namespace {

using namespace waitroom;
using namespace waitroom::gateway;

constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void require(bool ok) {
    if (!ok) {
        std::abort();
    }
}

// The canonical reading of a head, as the gateway routes it.
util::canonical_request read_canonical(const request_head& head, util::target_buffers& buffers) {
    const auto host = head[http::field::host];
    const bool has_host = head.find(http::field::host) != head.end();
    return util::canonicalize_request(head.method_string(), head.target(),
                                      has_host ? &host : nullptr, true, buffers);
}

// The forwarded head of `head` parses back and routes as it did.
void check_forwarded(const request_head& head) {
    if (!request_problem(head).empty()) {
        return;  // the gateway answers 400 itself
    }
    util::target_buffers buffers;
    const auto canonical = read_canonical(head, buffers);
    if (canonical.status != util::target_status::ok) {
        return;  // answered by the gateway (400, 405), never forwarded
    }
    forward_info fi;
    fi.client_ip = "192.0.2.7";
    fi.origin_host = canonical.host.authority;
    fi.path = canonical.target.form == util::target_form::asterisk ? std::string_view{"*"}
                                                                   : canonical.target.path;
    fi.query = canonical.target.query;
    fi.forwarded_host = canonical.host.authority;
    std::string out;
    write_origin_request(head, out, fi);

    request_head again;
    head_parser<true> parser(again);
    parser.header_limit(1 << 20);
    error_code ec;
    std::size_t used = parser.put(boost::asio::buffer(out.data(), out.size()), ec);
    require(!ec && parser.is_header_done() && used <= out.size());
    require(again.method_string() == head.method_string());
    require(again.find(http::field::host) != again.end());

    util::target_buffers again_buffers;
    const auto routed = read_canonical(again, again_buffers);
    require(routed.status == util::target_status::ok);
    require(routed.target.path == canonical.target.path);
    require(routed.target.query == canonical.target.query);
    require(routed.host.authority == canonical.host.authority);
}

class answering_handler : public h2_codec::handler {
  public:
    h2_codec* codec = nullptr;

    void on_request(const h2_request& r) override {
        check_forwarded(*r.head);
        const std::pair<std::string_view, std::string_view> fields[] = {
            {"Content-Type", "text/plain"}, {"Connection", "close"}};
        codec->respond(r.stream_id, 200, fields, true);
        codec->send_body(r.stream_id, {body_.data(), body_.size()}, true);
    }
    void on_body(std::int32_t stream, std::span<const char> data, bool) override {
        codec->consume(stream, data.size());
    }
    void on_body_sent(std::int32_t) override {}
    void on_stream_closed(std::int32_t, std::uint32_t) override {}

  private:
    std::string body_ = std::string(3000, 'x');
};

void drain(h2_codec& codec) {
    for (int i = 0; i < 64; ++i) {
        const auto out = codec.output();
        if (out.empty()) {
            return;
        }
        codec.consumed(out.size());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::size_t step = 1 + data[0] % 64;
    std::string input(preface);
    input.append(reinterpret_cast<const char*>(data + 1), size - 1);

    answering_handler handler;
    h2_limits limits;
    limits.max_header_bytes = 4096;
    auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
    h2_codec codec(handler, limits, now);
    handler.codec = &codec;
    for (std::size_t at = 0; at < input.size(); at += step) {
        const std::size_t n = std::min(step, input.size() - at);
        now += std::chrono::milliseconds(1);
        const bool go_on = codec.receive({input.data() + at, n}, now);
        drain(codec);
        if (!go_on) {
            break;
        }
    }
    return 0;
}
