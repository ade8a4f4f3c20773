#pragma once
// Names and helpers every unit over Asio and Beast uses (gateway/, admin/): namespace aliases,
// the concrete executor types, and the `fail` reporter that stays quiet about the expected noise
// of a proxy (peers closing, timeouts, cancellations).

#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>

#include <spdlog/spdlog.h>

namespace waitroom::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using beast::error_code;

// The data plane's sockets, streams and timers name their worker's executor by its concrete
// type: every asynchronous operation copies its executor a few times, and a type-erased
// any_io_executor makes each copy an indirect call.
using executor_type = asio::io_context::executor_type;
using tcp_socket = asio::basic_stream_socket<tcp, executor_type>;
using tcp_acceptor = asio::basic_socket_acceptor<tcp, executor_type>;
using tcp_stream = beast::basic_stream<tcp, executor_type>;
using steady_timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                                asio::wait_traits<std::chrono::steady_clock>,
                                                executor_type>;

// True for the errors that are a normal end of a connection, not worth a log line.
inline bool is_expected_noise(const error_code& ec) {
    return ec == asio::error::operation_aborted || ec == asio::error::eof ||
           ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
           ec == asio::error::not_connected || ec == beast::error::timeout ||
           ec == http::error::end_of_stream || ec == ssl::error::stream_truncated;
}

inline void fail(const error_code& ec, const char* what) {
    if (is_expected_noise(ec)) {
        spdlog::trace("gateway: {}: {}", what, ec.message());
        return;
    }
    spdlog::debug("gateway: {}: {}", what, ec.message());
}

}  // namespace waitroom::net
