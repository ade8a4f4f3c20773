#include "http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <limits>
#include <vector>

namespace waitroom::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

client_connection::client_connection(std::uint16_t port, std::chrono::milliseconds timeout)
    : client_connection(port, timeout, "") {}

client_connection::client_connection(std::uint16_t port, std::chrono::milliseconds timeout,
                                     std::string_view source, int receive_buffer)
    : stream_(ioc_), timeout_(timeout), port_(port) {
    boost::system::error_code result = asio::error::timed_out;
    auto& s = stream_.socket();
    s.open(tcp::v4());
    if (receive_buffer > 0) {
        s.set_option(asio::socket_base::receive_buffer_size(receive_buffer));
    }
    if (!source.empty()) {
        s.bind(tcp::endpoint(asio::ip::make_address(std::string(source)), 0));
    }
    stream_.expires_after(timeout_);
    stream_.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_),
                          [&](boost::system::error_code ec) { result = ec; });
    run();
    connected_ = !result;
}

void client_connection::run() {
    ioc_.restart();
    ioc_.run();
}

http_response client_connection::request(http::request<http::string_body> req) {
    http_response out;
    if (req[http::field::host].empty()) {
        req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    }
    req.prepare_payload();
    boost::system::error_code ec;
    stream_.expires_after(timeout_);
    http::async_write(stream_, req, [&](boost::system::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) {
        out.error = "write: " + ec.message();
        return out;
    }
    return read_response(req.method() == http::verb::head);
}

http_response client_connection::read_response(bool head) {
    http_response out;
    boost::system::error_code ec;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (head) {
        parser.skip(true);
    }
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, parser,
                     [&](boost::system::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) {
        out.error = "read: " + ec.message();
        return out;
    }
    auto res = parser.release();
    out.status = res.result_int();
    out.body = std::move(res.body());
    out.headers = std::move(res.base());
    return out;
}

http_response client_connection::get(std::string_view target) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    return request(std::move(req));
}

http_response client_connection::post(std::string_view target, std::string body) {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.body() = std::move(body);
    return request(std::move(req));
}

std::size_t client_connection::available() {
    if (buffer_.size() > 0) {
        return buffer_.size();
    }
    boost::system::error_code ec;
    return stream_.socket().available(ec);
}

bool client_connection::write_raw(std::string_view bytes) {
    boost::system::error_code ec;
    stream_.expires_after(timeout_);
    asio::async_write(stream_, asio::buffer(bytes.data(), bytes.size()),
                      [&](boost::system::error_code e, std::size_t) { ec = e; });
    run();
    return !ec;
}

std::string client_connection::read_until_close(std::chrono::milliseconds timeout) {
    std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    auto deadline = std::chrono::steady_clock::now() + timeout;
    char chunk[16 * 1024];
    for (;;) {
        boost::system::error_code ec;
        std::size_t n = 0;
        stream_.expires_at(deadline);
        stream_.async_read_some(asio::buffer(chunk),
                                [&](boost::system::error_code e, std::size_t got) {
                                    ec = e;
                                    n = got;
                                });
        run();
        out.append(chunk, n);
        if (ec) {
            return out;
        }
    }
}

bool client_connection::closed_by_peer(std::chrono::milliseconds timeout) {
    char chunk[4096];
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        boost::system::error_code ec;
        stream_.expires_at(deadline);
        stream_.async_read_some(asio::buffer(chunk),
                                [&](boost::system::error_code e, std::size_t) { ec = e; });
        run();
        if (ec == beast::error::timeout) {
            return false;
        }
        if (ec) {
            return true;  // EOF or reset
        }
    }
}

http_response client_connection::upload(std::string_view target, std::uint64_t size,
                                        const std::function<void(std::uint64_t)>& progress) {
    http_response out;
    std::string head = "POST " + std::string(target) +
                       " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                       "\r\nContent-Length: " + std::to_string(size) +
                       "\r\nContent-Type: application/octet-stream\r\n\r\n";
    if (!write_raw(head)) {
        out.error = "write head";
        return out;
    }
    const std::string block(256 * 1024, 'x');
    std::uint64_t sent = 0;
    std::uint64_t next_report = 0;
    while (sent < size) {
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - sent));
        if (!write_raw(std::string_view(block.data(), n))) {
            out.error = "write body at " + std::to_string(sent);
            return out;
        }
        sent += n;
        if (sent >= next_report) {
            progress(sent);
            next_report += 4 << 20;
        }
    }
    http::response_parser<http::string_body> parser;
    boost::system::error_code ec;
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, parser,
                     [&](boost::system::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) {
        out.error = "read: " + ec.message();
        return out;
    }
    out.status = parser.get().result_int();
    out.body = parser.get().body();
    out.headers = parser.get().base();
    return out;
}

http_response client_connection::download(std::string_view target,
                                          const std::function<void(std::uint64_t)>& progress) {
    http_response out;
    std::string head = "GET " + std::string(target) +
                       " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n\r\n";
    if (!write_raw(head)) {
        out.error = "write head";
        return out;
    }
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    boost::system::error_code ec;
    stream_.expires_after(timeout_);
    http::async_read_header(stream_, buffer_, parser,
                            [&](boost::system::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) {
        out.error = "read header: " + ec.message();
        return out;
    }
    std::vector<char> chunk(256 * 1024);
    std::uint64_t got = 0;
    std::uint64_t next_report = 0;
    while (!parser.is_done()) {
        parser.get().body().data = chunk.data();
        parser.get().body().size = chunk.size();
        stream_.expires_after(timeout_);
        http::async_read(stream_, buffer_, parser,
                         [&](boost::system::error_code e, std::size_t) { ec = e; });
        run();
        if (ec == http::error::need_buffer) {
            ec = {};
        }
        if (ec) {
            out.error = "read body at " + std::to_string(got) + ": " + ec.message();
            return out;
        }
        got += chunk.size() - parser.get().body().size;
        if (got >= next_report) {
            progress(got);
            next_report += 4 << 20;
        }
    }
    out.status = parser.get().result_int();
    out.headers = parser.get().base();
    out.body = std::to_string(got);
    return out;
}

http_response http_get(std::uint16_t port, std::string_view target) {
    client_connection c(port);
    if (!c.connected()) {
        http_response r;
        r.error = "connect failed";
        return r;
    }
    return c.get(target);
}

http_response cookie_jar::get(std::uint16_t port, std::string_view target, bool json) {
    client_connection c(port, std::chrono::seconds{30}, source_);
    if (!c.connected()) {
        http_response r;
        r.error = "connect failed";
        return r;
    }
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "shop.test");
    if (json) {
        req.set(http::field::accept, "application/json");
    }
    if (!cookie_.empty()) {
        req.set(http::field::cookie, cookie_);
    }
    if (check_in_) {
        req.set("Waitroom-Check-In", "1");
    }
    if (!solution_.empty()) {
        req.set("Waitroom-Solution", solution_);
    }
    if (!forwarded_for_.empty()) {
        req.set("X-Forwarded-For", forwarded_for_);
    }
    auto r = c.request(std::move(req));
    // Keep what the gateway sets, as a browser would.
    for (auto it = r.headers.find(http::field::set_cookie);
         it != r.headers.end() && it->name() == http::field::set_cookie; ++it) {
        std::string v{it->value()};
        if (v.rfind(std::string(name) + "=", 0) == 0) {
            cookie_ = v.substr(0, v.find(';'));
        }
    }
    return r;
}

}  // namespace waitroom::test
