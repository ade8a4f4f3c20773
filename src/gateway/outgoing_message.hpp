#pragma once
// One HTTP/1.1 message on its way out, written straight from reused buffers: its head is text
// built in place (forward_headers.hpp, write_local_head), its body goes out piece by piece from
// the caller's memory, chunk-framed when the message is chunked. No field container and no
// serializer sit in between, and in steady state nothing is allocated: the head's string keeps
// its capacity from one request to the next.
//
// Use: head(chunked) → build the head into the returned string → queue(piece, last) → send the
// buffers (write_now, or asio::async_write(stream, m.buffers()) then m.sent()) → queue the next
// piece… until done().

#include <boost/asio/buffer.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common.hpp"
#include "waitroom/gateway/request_filter.hpp"

namespace waitroom::gateway {

class outgoing_message {
  public:
    // Starts a new message; returns the (emptied) head for the caller to write into.
    std::string& head(bool chunked) {
        head_.clear();
        chunked_ = chunked;
        head_pending_ = true;
        last_queued_ = false;
        count_ = 0;
        return head_;
    }

    // Sends the head again with the next queue() (the same request on a fresh connection).
    void resend_head() {
        head_pending_ = true;
        last_queued_ = false;
        count_ = 0;
    }

    // Queues the head (if not sent yet) and a body piece (may be empty); `last`: the body ends
    // with it (a chunked body gets its last-chunk). Only when buffers() is empty.
    void queue(const char* data, std::size_t size, bool last);

    // What is queued and not yet sent, as a buffer sequence (valid until the next queue()).
    std::span<const boost::asio::const_buffer> buffers() const { return {bufs_.data(), count_}; }
    bool empty() const { return count_ == 0; }

    // `n` bytes of buffers() have been sent.
    void consume(std::size_t n);
    // All of buffers() has been sent.
    void sent() { count_ = 0; }

    // The last piece has been queued and sent.
    bool done() const { return last_queued_ && count_ == 0; }

  private:
    void push(const void* p, std::size_t n) {
        if (n > 0) {
            bufs_[count_++] = boost::asio::const_buffer(p, n);
        }
    }

    void join_small();
    static constexpr std::size_t join_limit = 4096;

    std::string head_;
    std::string joined_;  // a small message's pieces in one buffer (see join_small)
    bool chunked_ = false;
    bool head_pending_ = false;
    bool last_queued_ = false;
    std::array<char, 20> chunk_line_{};  // "<hex size>\r\n"
    std::array<boost::asio::const_buffer, 4> bufs_;
    std::size_t count_ = 0;
};

// Sends what a non-blocking socket takes now. True when nothing is left to send now (`ec`
// holds a real error, if any); false when the socket is full and the rest must go
// asynchronously (m.buffers() then holds exactly the rest).
bool write_now(tcp_socket& s, outgoing_message& m, error_code& ec);

// ---- writing heads ------------------------------------------------------------------------

// "HTTP/1.x <status> <reason>\r\n"; an empty reason is replaced by the standard one.
void append_status_line(std::string& out, unsigned version, unsigned status,
                        std::string_view reason);
// "<name>: <value>\r\n"
void append_field(std::string& out, std::string_view name, std::string_view value);
void append_field(std::string& out, std::string_view name, std::uint64_t value);
// The Connection field a response to a client of `version` needs to keep (or end) the
// connection: "close" on HTTP/1.1, "keep-alive" on HTTP/1.0, nothing when the default holds.
void append_connection(std::string& out, unsigned version, bool keep_alive);

// The head of a response the gateway answers itself (error pages, queue pages): status line,
// `written` (fields already written as "Name: value\r\n" lines), `fields`, Content-Length,
// Connection, blank line.
void write_local_head(std::string& out, unsigned version, unsigned status, std::string_view written,
                      const header_list& fields, std::size_t content_length, bool keep_alive);
inline void write_local_head(std::string& out, unsigned version, unsigned status,
                             const header_list& fields, std::size_t content_length,
                             bool keep_alive) {
    write_local_head(out, version, status, {}, fields, content_length, keep_alive);
}

}  // namespace waitroom::gateway
