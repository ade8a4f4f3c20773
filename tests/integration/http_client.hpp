#pragma once
// A small blocking HTTP/1.1 client for whole-process tests, built on Beast with a deadline on
// every step (a hung daemon fails the test instead of hanging it). Raw-bytes helpers cover the
// malformed requests a real client library would refuse to send.

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace waitroom::test {

namespace http = boost::beast::http;

struct http_response {
    unsigned status = 0;  // 0 when no response arrived
    http::fields headers;
    std::string body;
    std::string error;  // transport error, "" when none
};

// One client connection to 127.0.0.1:port, reused across requests (keep-alive).
class client_connection {
  public:
    explicit client_connection(std::uint16_t port,
                               std::chrono::milliseconds timeout = std::chrono::seconds{30});
    // From the loopback address `source` (any of 127.0.0.0/8: another client as the gateway
    // sees it; "" = the system's choice), with a receive buffer of `receive_buffer` bytes when
    // > 0 (a slow reader).
    client_connection(std::uint16_t port, std::chrono::milliseconds timeout,
                      std::string_view source, int receive_buffer = 0);

    bool connected() const { return connected_; }
    http_response request(http::request<http::string_body> req);
    http_response get(std::string_view target);
    http_response post(std::string_view target, std::string body);

    // Reads one response (after write_raw sent a request).
    http_response read_response(bool head = false);

    // Sends `bytes` as they are.
    bool write_raw(std::string_view bytes);
    // Bytes (of a response) that can be read now without waiting.
    std::size_t available();
    // Reads whatever arrives until the peer closes or `timeout` passes.
    std::string read_until_close(std::chrono::milliseconds timeout);
    // True when the peer has closed the connection (read returns EOF) within `timeout`.
    bool closed_by_peer(std::chrono::milliseconds timeout);

    // Streams a `size`-byte request body of repeated 'x' to `target` with Content-Length,
    // calling `progress(bytes_sent)` every few MiB, then reads the response.
    http_response upload(std::string_view target, std::uint64_t size,
                         const std::function<void(std::uint64_t)>& progress);
    // Reads a response to GET `target` without keeping the body: returns its size in `body`
    // (as a decimal string), calling `progress(bytes_read)` every few MiB.
    http_response download(std::string_view target,
                           const std::function<void(std::uint64_t)>& progress);

  private:
    // Runs the io_context until the started operation finishes.
    void run();

    boost::asio::io_context ioc_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::chrono::milliseconds timeout_;
    std::uint16_t port_;
    bool connected_ = false;
};

// One request on a fresh connection.
http_response http_get(std::uint16_t port, std::string_view target);

// One visitor's browser for the rooms of host `shop.test`: each GET (on a fresh connection)
// carries the admission cookie it holds and keeps the one the gateway sets.
class cookie_jar {
  public:
    static constexpr std::string_view name = "_cfwaitingroom";

    http_response get(std::uint16_t port, std::string_view target, bool json = false);
    const std::string& cookie() const { return cookie_; }  // "name=value", "" before any
    void set_cookie(std::string c) { cookie_ = std::move(c); }
    // Where the visitor seems to come from: an X-Forwarded-For field (for a daemon that trusts
    // the test's 127.0.0.1) and a loopback source address ("" = none / the system's choice).
    void forwarded_for(std::string address) { forwarded_for_ = std::move(address); }
    void source(std::string address) { source_ = std::move(address); }
    // Send `Waitroom-Check-In: 1`, as the queue page's script does.
    void check_in(bool on) { check_in_ = on; }
    // Send `Waitroom-Solution: <s>` (a challenge's solution) with each GET; "" = none.
    void solution(std::string s) { solution_ = std::move(s); }

  private:
    bool check_in_ = false;
    std::string solution_;
    std::string cookie_;
    std::string forwarded_for_;
    std::string source_;
};

}  // namespace waitroom::test
