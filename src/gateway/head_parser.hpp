#pragma once
// An HTTP/1.1 parser (Beast's basic_parser: tokenising, framing, limits, chunked decoding) that
// puts the head into a message_head the session owns and reuses, and the body into the caller's
// buffer piece by piece, as buffer_body does: `body().data/size` name the free room, and a full
// piece stops the parse with error::need_buffer.

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/buffer_body.hpp>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "chunk_line.hpp"
#include "common.hpp"
#include "waitroom/gateway/message_head.hpp"

namespace waitroom::gateway {

// The longest chunk-size line (with its extensions) a chunked body may carry.
inline constexpr std::size_t chunk_line_limit = 4096;

// Bounds and checks what a chunked body's parser holds back while it waits for the rest of a
// chunk-size line or of the trailers (Beast's parser bounds neither, and reads a line only once
// it is whole): `pending` is what it left unconsumed when it asked for more bytes. A line that
// no valid chunk line can begin with (chunk_line.hpp: a control byte, a quoted string cut by a
// CR, a bad CRLF) or one longer than chunk_line_limit is bad_chunk_extension at once; trailers
// longer than `trailer_limit` are header_limit; else no error. Body data never waits here (the
// parser takes it as it comes), so a pending part is only ever a line or trailers.
inline error_code chunk_wait_problem(std::string_view pending, std::size_t trailer_limit) {
    // The CRLF that ends the previous chunk's data may come first.
    if (pending.starts_with("\r\n")) {
        pending.remove_prefix(2);
    } else if (pending == "\r") {
        return {};
    }
    const auto line = check_chunk_line(pending);
    if (line.what == chunk_line_scan::verdict::malformed) {
        return http::error::bad_chunk_extension;
    }
    if (line.what == chunk_line_scan::verdict::partial) {
        return pending.size() > chunk_line_limit ? error_code(http::error::bad_chunk_extension)
                                                 : error_code{};
    }
    if (line.length - 2 > chunk_line_limit) {
        return http::error::bad_chunk_extension;
    }
    // A whole line the parser did not take is the last chunk's: its trailers are arriving.
    if (pending.size() - line.length > trailer_limit) {
        return http::error::header_limit;
    }
    return {};
}

template <bool IsRequest>
class head_parser : public http::basic_parser<IsRequest> {
  public:
    using head_type = std::conditional_t<IsRequest, request_head, response_head>;

    // Parses into `head`, which it clears first; `head` must outlive the parser.
    explicit head_parser(head_type& head) : head_(head) { head_.clear(); }

    head_type& get() { return head_; }
    // The room for the next body bytes (data null: none yet, the parse stops at the body).
    http::buffer_body::value_type& body() { return body_; }

  private:
    void on_request_impl(http::verb method, beast::string_view method_str,
                         beast::string_view target, int version, error_code& ec) override {
        if constexpr (IsRequest) {
            if (method == http::verb::unknown) {
                head_.method_string({method_str.data(), method_str.size()});
            } else {
                head_.method(method);
            }
            head_.target({target.data(), target.size()});
            head_.version(static_cast<unsigned>(version));
        }
        ec = {};
    }

    void on_response_impl(int code, beast::string_view reason, int version,
                          error_code& ec) override {
        if constexpr (!IsRequest) {
            head_.result(static_cast<unsigned>(code));
            if (!reason.empty()) {
                head_.reason({reason.data(), reason.size()});
            }
            head_.version(static_cast<unsigned>(version));
        }
        ec = {};
    }

    void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                       error_code& ec) override {
        head_.insert(name, {name_string.data(), name_string.size()}, {value.data(), value.size()});
        ec = {};
    }

    void on_header_impl(error_code& ec) override { ec = {}; }

    void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code& ec) override {
        ec = {};
    }

    std::size_t on_body_impl(beast::string_view body, error_code& ec) override {
        return take(body, ec);
    }

    // Beast lets any byte through a quoted extension value: the line is held to the grammar
    // chunk_wait_problem holds its parts to.
    void on_chunk_header_impl(std::uint64_t, beast::string_view extensions,
                              error_code& ec) override {
        ec = valid_chunk_extensions({extensions.data(), extensions.size()})
                 ? error_code{}
                 : error_code(http::error::bad_chunk_extension);
    }

    std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                   error_code& ec) override {
        return take(body, ec);
    }

    void on_finish_impl(error_code& ec) override { ec = {}; }

    // Copies what fits of `bytes` into the caller's piece.
    std::size_t take(beast::string_view bytes, error_code& ec) {
        if (body_.data == nullptr) {
            ec = http::error::need_buffer;
            return 0;
        }
        const std::size_t n = std::min(bytes.size(), body_.size);
        std::memcpy(body_.data, bytes.data(), n);
        body_.data = static_cast<char*>(body_.data) + n;
        body_.size -= n;
        ec = n == bytes.size() ? error_code{} : error_code{http::error::need_buffer};
        return n;
    }

    head_type& head_;
    http::buffer_body::value_type body_;
};

}  // namespace waitroom::gateway
