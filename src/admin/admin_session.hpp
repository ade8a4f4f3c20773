#pragma once
// One admin connection: reads a request (bounded header, 64 KiB body, timeouts), lets
// admin_routes answer it (maybe later, for a PATCH), writes the reply, and loops on keep-alive.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <functional>
#include <memory>
#include <optional>

#include "admin_routes.hpp"
#include "waitroom/admin/admin_server.hpp"

namespace waitroom::admin {

// What sessions share with the server: routes, options, the token and the registry of open
// sessions (for stop()).
struct admin_shared;

class admin_session : public std::enable_shared_from_this<admin_session> {
  public:
    admin_session(std::shared_ptr<admin_shared> shared, boost::asio::ip::tcp::socket socket);

    ~admin_session();
    admin_session(const admin_session&) = delete;
    admin_session& operator=(const admin_session&) = delete;

    void run();
    // Closes the socket; posted to the session's executor by admin_server::stop().
    void close();

  private:
    void do_read();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void on_reply(admin_reply reply);
    void do_write(boost::beast::http::response<boost::beast::http::string_body> res);
    void on_write(bool keep_alive, boost::beast::error_code ec, std::size_t bytes);
    void do_close();
    void do_linger();
    void do_discard();

    std::shared_ptr<admin_shared> shared_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    std::shared_ptr<const void> res_;  // the response being written
    unsigned version_ = 11;
    bool keep_alive_ = true;
    bool linger_ = false;  // refused mid-request: drain before closing
    boost::beast::flat_buffer discard_;
};

}  // namespace waitroom::admin
