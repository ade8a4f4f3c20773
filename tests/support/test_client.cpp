#include "test_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <cstring>

namespace waitroom::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

test_client::test_client(std::uint16_t port) : socket_(ioc_), port_(port) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
}

response test_client::send(request req, bool head) {
    if (req.find(http::field::host) == req.end()) {
        req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    }
    if (req.find(http::field::transfer_encoding) == req.end()) {
        req.prepare_payload();
    }
    http::write(socket_, req);
    return read(head);
}

response test_client::get(std::string_view target) {
    request req{http::verb::get, target, 11};
    return send(std::move(req));
}

void test_client::write_raw(std::string_view bytes) {
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()));
}

response test_client::read(bool head) {
    http::response_parser<http::string_body> p;
    p.body_limit(boost::none);
    p.skip(head);
    http::read(socket_, buffer_, p);
    return p.release();
}

std::string test_client::read_header_text() {
    auto n = asio::read_until(socket_, asio::dynamic_buffer(text_buffer_), "\r\n\r\n");
    std::string header = text_buffer_.substr(0, n);
    // What read_until fetched past the header belongs to the next message.
    auto rest = text_buffer_.substr(n);
    text_buffer_.clear();
    if (!rest.empty()) {  // memcpy from an empty buffer's null data() is undefined
        auto b = buffer_.prepare(rest.size());
        std::memcpy(b.data(), rest.data(), rest.size());
        buffer_.commit(rest.size());
    }
    return header;
}

bool test_client::closed_by_server() {
    if (buffer_.size() > 0) {
        return false;
    }
    char c = 0;
    beast::error_code ec;
    socket_.read_some(asio::buffer(&c, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
}

}  // namespace waitroom::test
