#pragma once
// Header work of the reverse proxy, kept free of I/O so it is cheap to test: request framing
// checks (request smuggling defences), hop-by-hop removal and the X-Forwarded-* rewrite.


#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/gateway/request_filter.hpp"

namespace waitroom::gateway {

// `s` without the optional whitespace (SP, HTAB) around a field value or list element.
std::string_view trim_ows(std::string_view s);

// Why a request header must be refused with 400, or "" when its framing is unambiguous:
// more than one Host, Content-Length with Transfer-Encoding, differing or malformed
// Content-Lengths,
// Transfer-Encoding on HTTP/1.0, a transfer-coding other than `chunked`, or a field value
// holding NUL, CR or LF.
std::string_view request_problem(const request_head& req);

// True when the request asks for a WebSocket upgrade (the only upgrade that is tunnelled).
bool is_websocket_upgrade(const request_head& req);

struct forward_info {
    std::string_view client_ip;    // the visitor (see trusted_proxies): X-Real-IP, Forwarded
    bool tls = false;              // X-Forwarded-Proto: https / http (as the visitor sees it)
    std::string_view origin_host;  // Host sent to the origin ("host" or "host:port")
    std::string_view base_path;    // origin URL path prefix, "" for none
    // The canonical target (util::canonicalize_request): path ("*" for OPTIONS *) and query
    // ("?…" or ""). An empty path sends the request's own target, which must then be
    // origin-form already.
    std::string_view path;
    std::string_view query;
    std::string_view forwarded_host;  // X-Forwarded-Host: the canonical Host; "" = none
    std::string_view peer_ip;         // the peer, appended to X-Forwarded-For; "" = client_ip
    // Keep the client's X-Forwarded-For chain, the peer appended (a trusted peer, or
    // `forwarded_headers: append`); else X-Forwarded-For is the peer alone.
    bool keep_forwarded = false;
    // Pass the client's X-Real-IP and Forwarded as sent (`forwarded_headers: append`); else,
    // when sent, they are replaced by the gateway's own naming `client_ip`: a balancer in
    // trusted_proxies vouches for its X-Forwarded-For, not for fields a visitor set through it.
    bool pass_client_fields = false;
    // Request fields never forwarded (compared without regard to case); null = none.
    const std::vector<std::string>* drop_fields = nullptr;
};

// Writes the request head sent to the origin (request line, fields, blank line) into `out`,
// from the client's: end-to-end fields copied, hop-by-hop ones dropped (Connection and what it
// names, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Expect, Upgrade except
// WebSocket), framing set from the client's body (chunked stays chunked, a length stays that
// length), X-Forwarded-For appended to or overwritten (see forward_info), X-Forwarded-Proto/-Host
// set, `drop_fields` removed, Host set to `info.origin_host`, the canonical target sent with the
// base path before it. HTTP/1.1 to the origin, always.
void write_origin_request(const request_head& in, std::string& out,
                          const forward_info& info);

// How the response to the client is framed and kept.
struct client_framing {
    enum class body {
        as_origin,  // no body (HEAD, 204, 304): the origin's Content-Length, if any, is kept
        length,     // Content-Length: `length`
        chunked,    // Transfer-Encoding: chunked
        until_close,  // neither: the connection's end ends the body (HTTP/1.0 client)
    };
    unsigned version = 11;  // the client's HTTP version (1.0 → 10, 1.1 → 11)
    body kind = body::as_origin;
    std::uint64_t length = 0;
    bool keep_alive = true;
    bool websocket_101 = false;  // keep the Upgrade/Connection pair of a 101 to a WebSocket
    const header_list* extra = nullptr;  // added after the origin's fields
};

// Removes from the origin's response head the fields never forwarded (hop-by-hop ones and those
// its Connection fields name), before the filter sees it: what the filter then adds (its
// Set-Cookie) cannot be dropped by a name the origin listed. Content-Length stays (framing).
void strip_hop_by_hop(response_head& res);

// Writes the response head sent to the client into `out`, from the origin's as
// strip_hop_by_hop left it (and the filter changed it): its fields but Content-Length, then
// `how.extra`, framing and Connection as `how` says.
void write_client_response(const response_head& in, std::string& out,
                           const client_framing& how);

}  // namespace waitroom::gateway
