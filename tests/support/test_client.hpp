#pragma once
// A small synchronous client for the gateway tests: one TCP connection, either writing exact
// bytes (framing tests) or Beast messages, and reading Beast responses.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace waitroom::test {

using response = boost::beast::http::response<boost::beast::http::string_body>;
using request = boost::beast::http::request<boost::beast::http::string_body>;

class test_client {
  public:
    explicit test_client(std::uint16_t port);

    // Sends `req` (Host and framing filled in when missing) and reads the response.
    response send(request req, bool head = false);
    response get(std::string_view target);

    void write_raw(std::string_view bytes);
    // Reads one response; `head` for a response to HEAD (no body).
    response read(bool head = false);
    // Reads the next response header and returns it as raw text (for an interim 100).
    std::string read_header_text();
    // True when the server has closed the connection (reads EOF or reset, nothing else).
    bool closed_by_server();

    boost::asio::ip::tcp::socket& socket() { return socket_; }
    boost::beast::flat_buffer& buffer() { return buffer_; }

  private:
    boost::asio::io_context ioc_;
    boost::asio::ip::tcp::socket socket_;
    boost::beast::flat_buffer buffer_;
    std::string text_buffer_;
    std::uint16_t port_;
};

}  // namespace waitroom::test
