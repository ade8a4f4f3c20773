#include "outgoing_message.hpp"

#include <boost/beast/http/status.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace waitroom::gateway {

namespace {

constexpr std::string_view crlf = "\r\n";
constexpr std::string_view crlf_last_chunk = "\r\n0\r\n\r\n";
constexpr std::string_view last_chunk = "0\r\n\r\n";

}  // namespace

void outgoing_message::queue(const char* data, std::size_t size, bool last) {
    count_ = 0;
    if (head_pending_) {
        push(head_.data(), head_.size());
        head_pending_ = false;
    }
    last_queued_ = last;
    if (!chunked_) {
        push(data, size);
    } else if (size > 0) {
        auto [end, ec] = std::to_chars(chunk_line_.data(), chunk_line_.data() + 16, size, 16);
        (void)ec;  // 16 hex digits hold any size_t
        *end++ = '\r';
        *end++ = '\n';
        push(chunk_line_.data(), static_cast<std::size_t>(end - chunk_line_.data()));
        push(data, size);
        const auto tail = last ? crlf_last_chunk : crlf;
        push(tail.data(), tail.size());
    } else if (last) {
        push(last_chunk.data(), last_chunk.size());
    }
    join_small();
}

void outgoing_message::join_small() {
    // A small message in pieces (head and a 64-byte body, say) goes out as one buffer: one
    // plain send instead of a sendmsg with an iovec array. Copying a few hundred bytes costs
    // less than the kernel's gather set-up.
    if (count_ < 2) {
        return;
    }
    std::size_t total = 0;
    for (std::size_t i = 0; i < count_; ++i) {
        total += bufs_[i].size();
    }
    if (total > join_limit) {
        return;
    }
    joined_.clear();
    for (std::size_t i = 0; i < count_; ++i) {
        joined_.append(static_cast<const char*>(bufs_[i].data()), bufs_[i].size());
    }
    bufs_[0] = boost::asio::const_buffer(joined_.data(), joined_.size());
    count_ = 1;
}

void outgoing_message::consume(std::size_t n) {
    std::size_t i = 0;
    while (i < count_ && n >= bufs_[i].size()) {
        n -= bufs_[i].size();
        ++i;
    }
    if (i < count_) {
        bufs_[i] += n;
    }
    std::size_t k = 0;
    for (; i < count_; ++i) {
        bufs_[k++] = bufs_[i];
    }
    count_ = k;
}

bool write_now(tcp_socket& s, outgoing_message& m, error_code& ec) {
    while (!m.empty()) {
        // One buffer is passed as one: Asio then uses send, not sendmsg.
        const auto bufs = m.buffers();
        const std::size_t n =
            bufs.size() == 1 ? s.write_some(bufs.front(), ec) : s.write_some(bufs, ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            ec = {};
            return false;
        }
        if (ec) {
            return true;
        }
        m.consume(n);
    }
    return true;
}

void append_status_line(std::string& out, unsigned version, unsigned status,
                        std::string_view reason) {
    out += version >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ";
    char digits[8];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, status);
    (void)ec;
    out.append(digits, end);
    out += ' ';
    if (reason.empty()) {
        auto r = boost::beast::http::obsolete_reason(boost::beast::http::int_to_status(status));
        out.append(r.data(), r.size());
    } else {
        out += reason;
    }
    out += crlf;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
    // One size change and two copies instead of four appends (each its own capacity check);
    // the head's string keeps its capacity, so this allocates only while a session warms up.
    const std::size_t at = out.size();
    const std::size_t n = name.size() + value.size() + 4;
    if (out.capacity() - at < n) {
        out.reserve(std::max(2 * out.capacity(), at + n));
    }
    out.resize(at + n);
    char* p = out.data() + at;
    std::memcpy(p, name.data(), name.size());
    p += name.size();
    *p++ = ':';
    *p++ = ' ';
    std::memcpy(p, value.data(), value.size());
    p += value.size();
    *p++ = '\r';
    *p = '\n';
}

void append_field(std::string& out, std::string_view name, std::uint64_t value) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
    (void)ec;
    append_field(out, name, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

void append_connection(std::string& out, unsigned version, bool keep_alive) {
    if (version >= 11 && !keep_alive) {
        append_field(out, "Connection", "close");
    } else if (version < 11 && keep_alive) {
        append_field(out, "Connection", "keep-alive");
    }
}

void write_local_head(std::string& out, unsigned version, unsigned status, std::string_view written,
                      const header_list& fields, std::size_t content_length, bool keep_alive) {
    append_status_line(out, version, status, {});
    out += written;
    for (const auto& [name, value] : fields) {
        append_field(out, name, value);
    }
    append_field(out, "Content-Length", static_cast<std::uint64_t>(content_length));
    append_connection(out, version, keep_alive);
    out += crlf;
}

}  // namespace waitroom::gateway
