#pragma once
// What Beast's async_read_header and async_read do between two reads, for the reads the sessions
// make themselves (socket_reader, or a TLS stream's read_some): parse what the buffer holds, and
// name the error that a failed read stands for. Also the schedule that body_min_rate and
// response_min_rate set for a stream of bytes. Sans-io: no socket is touched here.

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "common.hpp"
#include "head_parser.hpp"

namespace waitroom::gateway {

// Slack on the schedules of body_min_rate and response_min_rate, for the first bytes of a stream.
inline constexpr auto rate_slack = std::chrono::seconds(1);

// How long `bytes` take at `rate` bytes per second, plus rate_slack.
inline std::chrono::steady_clock::duration rate_time(std::uint64_t bytes, std::uint64_t rate) {
    return rate_slack + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(static_cast<double>(bytes) /
                                                          static_cast<double>(rate)));
}

// Beast's parser errors (as opposed to network errors): the request is malformed.
inline bool is_parse_error(const error_code& ec) {
    return ec.category() == http::make_error_code(http::error::bad_target).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message &&
           ec != http::error::need_buffer;
}

// Parses what `buffer` holds into `parser` up to the end of the head, as Beast's
// async_read_header does between reads. True when the head is complete or the bytes are
// malformed (`ec` says which), false when more bytes are needed.
template <class Parser>
bool parse_head(Parser& parser, beast::flat_buffer& buffer, error_code& ec) {
    ec = {};
    while (!parser.is_header_done()) {
        if (buffer.size() == 0) {
            return false;
        }
        const std::size_t n = parser.put(buffer.data(), ec);
        buffer.consume(n);
        if (ec == http::error::need_more) {
            ec = {};
            return false;
        }
        if (ec) {
            return true;
        }
    }
    return true;
}

// Room in `buffer` for the next read of a request head of at most `header_limit` bytes: as
// Beast's read_size gives it (at least 512 bytes), except that the buffer grows by at most
// head_growth past what it holds, and never past the head and one byte more (which tells a head
// too large). A doubling would take an unfinished head of 12 KiB into a buffer of 24 KiB, and
// one of 16 KiB into 32 KiB; so a head holds at most head_growth more than its bytes. Bytes
// already buffered past the limit (a pipelined request) stay.
inline constexpr std::size_t head_growth = 4096;

inline asio::mutable_buffer head_read_room(beast::flat_buffer& buffer, std::size_t header_limit) {
    const std::size_t unbounded = buffer.max_size();
    const std::size_t most =
        std::min(header_limit + 1, std::max(buffer.capacity(), buffer.size() + head_growth));
    buffer.max_size(std::max(most, buffer.size() + 1));
    const auto room = buffer.prepare(beast::read_size(buffer, 65536));
    buffer.max_size(unbounded);
    return room;
}

// The error a failed read of a head reports, as Beast's would: at the end of the stream, no
// message at all (end_of_stream) or one cut short (partial_message); else the read's own.
template <class Parser>
error_code head_read_error(Parser& parser, error_code ec) {
    if (ec != asio::error::eof) {
        return ec;
    }
    if (!parser.got_some()) {
        return http::error::end_of_stream;
    }
    ec = {};
    parser.put_eof(ec);
    return ec ? ec : error_code(http::error::partial_message);
}

// Parses what `buffer` holds into the body piece `parser` fills, as Beast's async_read does
// between reads. True when the reading stops here: the piece is full, the body is done, or `ec`
// says what is wrong (such as a chunk-size line or trailers past their bounds, see
// chunk_wait_problem); false when more bytes are needed.
template <class Parser>
bool parse_piece(Parser& parser, beast::flat_buffer& buffer, std::size_t trailer_limit,
                 error_code& ec) {
    ec = {};
    while (buffer.size() > 0 && !parser.is_done()) {
        const std::size_t n = parser.put(buffer.data(), ec);
        buffer.consume(n);
        if (ec == http::error::need_buffer) {
            ec = {};
            return true;
        }
        if (ec == http::error::need_more) {
            ec = {};
            break;
        }
        if (ec) {
            return true;
        }
        if (n == 0) {
            break;
        }
    }
    if (parser.is_done()) {
        return true;
    }
    const auto pending = buffer.cdata();
    ec = chunk_wait_problem({static_cast<const char*>(pending.data()), pending.size()},
                            trailer_limit);
    return static_cast<bool>(ec);
}

}  // namespace waitroom::gateway
