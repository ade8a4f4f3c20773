#pragma once
// Header work of the reverse proxy, kept free of I/O so it is cheap to test: request framing
// checks (request smuggling defences), hop-by-hop removal and the X-Forwarded-* rewrite.

#include <boost/beast/http/message.hpp>

#include <string>
#include <string_view>

namespace waitroom::gateway {

// Why a request header must be refused with 400, or "" when its framing is unambiguous:
// Content-Length with Transfer-Encoding, differing or malformed Content-Lengths,
// Transfer-Encoding on HTTP/1.0, a transfer-coding other than `chunked`, or a field value
// holding NUL, CR or LF.
std::string_view request_problem(const boost::beast::http::request_header<>& req);

// True when the request asks for a WebSocket upgrade (the only upgrade that is tunnelled).
bool is_websocket_upgrade(const boost::beast::http::request_header<>& req);

struct forward_info {
    std::string_view client_ip;    // appended to X-Forwarded-For
    bool tls = false;              // X-Forwarded-Proto: https / http
    std::string_view origin_host;  // Host sent to the origin ("host" or "host:port")
    std::string_view base_path;    // origin URL path prefix, "" for none
};

// Builds the header sent to the origin from the client's: end-to-end fields copied, hop-by-hop
// ones dropped (Connection and what it names, Keep-Alive, Proxy-*, TE, Trailer,
// Transfer-Encoding, Expect, Upgrade except WebSocket), framing set from the client's body,
// X-Forwarded-For appended, X-Forwarded-Proto/-Host set, Host rewritten, base path prepended.
void build_origin_request(const boost::beast::http::request_header<>& in,
                          boost::beast::http::request_header<>& out, const forward_info& info);

// Builds the header sent to the client from the origin's: hop-by-hop fields dropped, except
// the Upgrade/Connection pair of a 101 to a WebSocket upgrade.
void build_client_response(const boost::beast::http::response_header<>& in,
                           boost::beast::http::response_header<>& out, bool websocket_101);

}  // namespace waitroom::gateway
