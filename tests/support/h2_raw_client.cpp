// The raw HTTP/2 test client: a non-blocking socket waited on with poll() against each call's
// deadline, OpenSSL for TLS, nghttp2's HPACK coder for header blocks. While a write waits for
// room, what the server sends is read into the input buffer, so a flood never deadlocks against
// a server whose own writes wait for this client to read.
#include "support/h2_raw_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace waitroom::test {

namespace {

constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::size_t max_buffered = 64u << 20;  // input kept while writing, at most

void put32(std::string& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>((v >> shift) & 0xff));
    }
}

std::uint32_t get32(const std::string& s, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        v = (v << 8) | static_cast<unsigned char>(s[at + i]);
    }
    return v;
}

std::string settings_entry(std::uint16_t id, std::uint32_t value) {
    std::string e;
    e.push_back(static_cast<char>(id >> 8));
    e.push_back(static_cast<char>(id & 0xff));
    put32(e, value);
    return e;
}

}  // namespace

std::string h2_reply::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (k == name) {
            return v;
        }
    }
    return {};
}

h2_raw_client::h2_raw_client(std::uint16_t port) : h2_raw_client(port, options{}) {}

h2_raw_client::h2_raw_client(std::uint16_t port, options opts) : opts_(opts) {
    // A write to a connection the server closed (a flood cut short) is an error, not a signal
    // that ends the test program.
    std::signal(SIGPIPE, SIG_IGN);
    nghttp2_hd_deflate_new(&deflater_, 4096);
    nghttp2_hd_inflate_new(&inflater_);
    if (!connect(port) || !handshake()) {
        return;
    }
    std::string hello(preface);
    hello += frame(h2_frame_type::settings, 0, 0,
                   settings_entry(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, opts_.initial_window) +
                       settings_entry(NGHTTP2_SETTINGS_ENABLE_PUSH, 0));
    if (opts_.grant_window) {
        std::string inc;
        put32(inc, (1u << 30));
        hello += frame(h2_frame_type::window_update, 0, 0, inc);
    }
    connected_ = send_raw(hello);
}

h2_raw_client::~h2_raw_client() {
    if (ssl_ != nullptr) {
        SSL_free(ssl_);
    }
    if (ctx_ != nullptr) {
        SSL_CTX_free(ctx_);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
    nghttp2_hd_deflate_del(deflater_);
    nghttp2_hd_inflate_del(inflater_);
}

std::chrono::steady_clock::time_point h2_raw_client::deadline() const {
    return std::chrono::steady_clock::now() + opts_.timeout;
}

bool h2_raw_client::connect(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (opts_.receive_buffer > 0) {
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &opts_.receive_buffer, sizeof(int));
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        error_ = "connect failed";
        return false;
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    return true;
}

bool h2_raw_client::handshake() {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);  // the test's self-signed certificate
    static const unsigned char h2_only[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(ctx_, h2_only, sizeof h2_only);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    const auto end = deadline();
    for (;;) {
        const int rc = SSL_connect(ssl_);
        if (rc == 1) {
            break;
        }
        const int err = SSL_get_error(ssl_, rc);
        const short events = err == SSL_ERROR_WANT_READ    ? POLLIN
                             : err == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                           : 0;
        if (events == 0 || !wait_socket(events, end)) {
            error_ = "TLS handshake failed";
            return false;
        }
    }
    const unsigned char* name = nullptr;
    unsigned size = 0;
    SSL_get0_alpn_selected(ssl_, &name, &size);
    if (std::string_view(reinterpret_cast<const char*>(name), name ? size : 0) != "h2") {
        error_ = "ALPN did not choose h2";
        return false;
    }
    return true;
}

bool h2_raw_client::wait_socket(short events, std::chrono::steady_clock::time_point end) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
        return false;
    }
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
}

// ---- writing ------------------------------------------------------------------------------

std::string h2_raw_client::frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                                 std::string_view payload) {
    std::string f;
    f.reserve(9 + payload.size());
    const auto n = static_cast<std::uint32_t>(payload.size());
    f.push_back(static_cast<char>((n >> 16) & 0xff));
    f.push_back(static_cast<char>((n >> 8) & 0xff));
    f.push_back(static_cast<char>(n & 0xff));
    f.push_back(static_cast<char>(type));
    f.push_back(static_cast<char>(flags));
    put32(f, stream & 0x7fffffff);
    f.append(payload);
    return f;
}

std::string h2_raw_client::rst_payload(std::uint32_t code) {
    std::string p;
    put32(p, code);
    return p;
}

bool h2_raw_client::send_raw(std::string_view bytes) {
    if (ssl_ == nullptr) {
        return false;
    }
    const auto end = deadline();
    while (!bytes.empty()) {
        const int rc = SSL_write(ssl_, bytes.data(),
                                 static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 20)));
        if (rc > 0) {
            bytes.remove_prefix(static_cast<std::size_t>(rc));
            continue;
        }
        const int err = SSL_get_error(ssl_, rc);
        if (err != SSL_ERROR_WANT_WRITE && err != SSL_ERROR_WANT_READ) {
            error_ = "write failed";
            return false;
        }
        // Take in what the server sends meanwhile: it may wait for us to read before it reads.
        if (!wait_socket(POLLIN | POLLOUT, end)) {
            error_ = "write timed out";
            return false;
        }
        if (in_.size() < max_buffered) {
            fill(std::chrono::steady_clock::now());
        }
    }
    return true;
}

bool h2_raw_client::send_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                               std::string_view payload) {
    return send_raw(frame(type, flags, stream, payload));
}

std::string h2_raw_client::encode(const h2_fields& fields) {
    std::vector<nghttp2_nv> nva;
    nva.reserve(fields.size());
    for (const auto& [name, value] : fields) {
        nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                       reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())),
                       name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    std::string out(nghttp2_hd_deflate_bound(deflater_, nva.data(), nva.size()), '\0');
    const auto n = nghttp2_hd_deflate_hd(deflater_, reinterpret_cast<std::uint8_t*>(out.data()),
                                         out.size(), nva.data(), nva.size());
    out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    return out;
}

bool h2_raw_client::send_headers(std::uint32_t stream, const h2_fields& fields, bool end_stream) {
    const auto flags =
        static_cast<std::uint8_t>(h2_flag::end_headers | (end_stream ? h2_flag::end_stream : 0));
    return send_frame(h2_frame_type::headers, flags, stream, encode(fields));
}

bool h2_raw_client::send_data(std::uint32_t stream, std::string_view data, bool end_stream) {
    return send_frame(h2_frame_type::data, end_stream ? h2_flag::end_stream : 0, stream, data);
}

bool h2_raw_client::send_rst(std::uint32_t stream, std::uint32_t code) {
    return send_frame(h2_frame_type::rst_stream, 0, stream, rst_payload(code));
}

bool h2_raw_client::send_window_update(std::uint32_t stream, std::uint32_t increment) {
    std::string p;
    put32(p, increment);
    return send_frame(h2_frame_type::window_update, 0, stream, p);
}

bool h2_raw_client::request(std::uint32_t stream, std::string_view path, const h2_fields& extra,
                            std::string_view authority, std::string_view method) {
    h2_fields fields = {{":method", std::string(method)},
                        {":scheme", "https"},
                        {":authority", std::string(authority)},
                        {":path", std::string(path)}};
    fields.insert(fields.end(), extra.begin(), extra.end());
    return send_headers(stream, fields, true);
}

// ---- reading ------------------------------------------------------------------------------

// Reads what the socket has into in_, waiting until `end` for the first bytes.
bool h2_raw_client::fill(std::chrono::steady_clock::time_point end) {
    char buf[16 * 1024];
    bool got = false;
    for (;;) {
        const int rc = SSL_read(ssl_, buf, sizeof buf);
        if (rc > 0) {
            in_.append(buf, static_cast<std::size_t>(rc));
            got = true;
            continue;
        }
        const int err = SSL_get_error(ssl_, rc);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
            if (got || !wait_socket(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, end)) {
                return got;
            }
            continue;
        }
        peer_closed_ = true;  // close_notify, a reset or EOF
        ERR_clear_error();
        return got;
    }
}

bool h2_raw_client::read_frame(std::chrono::steady_clock::time_point end) {
    for (;;) {
        if (in_.size() >= 9) {
            const std::size_t length = (static_cast<unsigned char>(in_[0]) << 16) |
                                       (static_cast<unsigned char>(in_[1]) << 8) |
                                       static_cast<unsigned char>(in_[2]);
            if (in_.size() >= 9 + length) {
                const auto type = static_cast<std::uint8_t>(in_[3]);
                const auto flags = static_cast<std::uint8_t>(in_[4]);
                const std::uint32_t stream = get32(in_, 5) & 0x7fffffff;
                const std::string payload = in_.substr(9, length);
                in_.erase(0, 9 + length);
                ++frames_read_;
                handle(type, flags, stream, payload);
                return true;
            }
        }
        if (peer_closed_ || ssl_ == nullptr || !fill(end)) {
            return false;
        }
    }
}

void h2_raw_client::handle(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                           const std::string& payload) {
    switch (type) {
        case h2_frame_type::data: {
            auto& s = streams_[stream];
            s.body += payload;
            s.ended = s.ended || (flags & h2_flag::end_stream) != 0;
            if (opts_.grant_window && !payload.empty()) {
                send_window_update(0, static_cast<std::uint32_t>(payload.size()));
                send_window_update(stream, static_cast<std::uint32_t>(payload.size()));
            }
            break;
        }
        case h2_frame_type::headers:
        case h2_frame_type::continuation:
            if (type == h2_frame_type::headers) {
                block_.clear();
                block_stream_ = stream;
                block_end_stream_ = (flags & h2_flag::end_stream) != 0;
            }
            block_ += payload;  // the server sends no padding or priority in HEADERS
            if ((flags & h2_flag::end_headers) != 0) {
                decode_block(block_stream_, block_, block_end_stream_);
            }
            break;
        case h2_frame_type::rst_stream:
            streams_[stream].reset = payload.size() >= 4 ? get32(payload, 0) : 0;
            streams_[stream].ended = true;
            break;
        case h2_frame_type::settings:
            for (std::size_t at = 0; (flags & h2_flag::ack) == 0 && at + 6 <= payload.size();
                 at += 6) {
                const auto id =
                    static_cast<std::uint16_t>((static_cast<unsigned char>(payload[at]) << 8) |
                                               static_cast<unsigned char>(payload[at + 1]));
                settings_[id] = get32(payload, at + 2);
            }
            if ((flags & h2_flag::ack) == 0) {
                send_frame(h2_frame_type::settings, h2_flag::ack, 0, {});
            }
            break;
        case h2_frame_type::goaway:
            goaway_last_ = payload.size() >= 8 ? get32(payload, 0) & 0x7fffffff : 0;
            goaway_ = payload.size() >= 8 ? get32(payload, 4) : 0;
            break;
        default:
            break;
    }
}

void h2_raw_client::decode_block(std::uint32_t stream, const std::string& block, bool end_stream) {
    auto& s = streams_[stream];
    const auto* in = reinterpret_cast<const std::uint8_t*>(block.data());
    std::size_t left = block.size();
    const bool trailers = s.status != 0 && s.status >= 200;
    for (;;) {
        nghttp2_nv nv;
        int inflate_flags = 0;
        const auto n = nghttp2_hd_inflate_hd2(inflater_, &nv, &inflate_flags, in, left, 1);
        if (n < 0) {
            error_ = "HPACK decoding failed";
            break;
        }
        in += n;
        left -= static_cast<std::size_t>(n);
        if ((inflate_flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
            const std::string name(reinterpret_cast<const char*>(nv.name), nv.namelen);
            const std::string value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
            if (name == ":status" && !trailers) {
                s.status = static_cast<unsigned>(std::stoul(value));
            } else if (!name.starts_with(":")) {
                s.headers.emplace_back(name, value);
            }
        }
        if ((inflate_flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
            nghttp2_hd_inflate_end_headers(inflater_);
            break;
        }
        if ((inflate_flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) {
            break;
        }
    }
    s.ended = s.ended || end_stream;
}

h2_reply h2_raw_client::await(std::uint32_t stream) {
    const auto end = deadline();
    while (!streams_[stream].ended && !goaway_) {
        if (!read_frame(end)) {
            break;
        }
    }
    // A GOAWAY may come with the stream's last frames right behind it.
    while (!streams_[stream].ended && goaway_ && stream <= goaway_last_ && read_frame(end)) {
    }
    return streams_[stream];
}

std::optional<std::uint32_t> h2_raw_client::await_goaway(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!goaway_ && read_frame(end)) {
    }
    return goaway_;
}

bool h2_raw_client::await_close(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!peer_closed_ && std::chrono::steady_clock::now() < end) {
        read_frame(end);
    }
    return peer_closed_;
}

}  // namespace waitroom::test
