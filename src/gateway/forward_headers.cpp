// Header rewriting for forwarding. Header names are compared case-insensitively through
// Beast's field enum where one exists, by string otherwise.
#include "forward_headers.hpp"

#include "common.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <charconv>
#include <optional>

namespace waitroom::gateway {

namespace {

bool has_bad_char(std::string_view v) {
    for (char c : v) {
        if (c == '\0' || c == '\r' || c == '\n') {
            return true;
        }
    }
    return false;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

std::optional<std::uint64_t> parse_length(std::string_view v) {
    v = trim(v);
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc{} || p != v.data() + v.size()) {
        return std::nullopt;
    }
    return n;
}

// Fields never forwarded in either direction (besides those named by Connection).
bool is_hop_by_hop(const http::fields::value_type& f) {
    switch (f.name()) {
        case http::field::connection:
        case http::field::keep_alive:
        case http::field::proxy_connection:
        case http::field::proxy_authenticate:
        case http::field::proxy_authorization:
        case http::field::te:
        case http::field::trailer:
        case http::field::transfer_encoding:
        case http::field::upgrade:
            return true;
        default:
            break;
    }
    auto name = f.name_string();
    return name.size() >= 6 && beast::iequals(name.substr(0, 6), "proxy-");
}

template <bool IsRequest>
bool named_by_connection(const http::header<IsRequest>& h, std::string_view name) {
    for (auto it = h.find(http::field::connection);
         it != h.end() && it->name() == http::field::connection; ++it) {
        for (auto token : http::token_list{it->value()}) {
            if (beast::iequals(token, name)) {
                return true;
            }
        }
    }
    return false;
}

template <bool IsRequest>
bool has_connection_token(const http::header<IsRequest>& h) {
    return h.find(http::field::connection) != h.end();
}

}  // namespace

std::string_view request_problem(const http::request_header<>& req) {
    std::optional<std::uint64_t> length;
    bool has_te = false;
    for (const auto& f : req) {
        if (has_bad_char(f.value()) || has_bad_char(f.name_string())) {
            return "field value holds NUL, CR or LF";
        }
        if (f.name() == http::field::content_length) {
            auto n = parse_length(f.value());
            if (!n) {
                return "malformed Content-Length";
            }
            if (length && *length != *n) {
                return "differing Content-Length fields";
            }
            length = n;
        } else if (f.name() == http::field::transfer_encoding) {
            if (has_te || !beast::iequals(trim(f.value()), "chunked")) {
                return "transfer-coding other than chunked";
            }
            has_te = true;
        }
    }
    if (has_te && length) {
        return "Content-Length with Transfer-Encoding";
    }
    if (has_te && req.version() < 11) {
        return "Transfer-Encoding on HTTP/1.0";
    }
    if (has_bad_char(req.target()) || req.target().empty()) {
        return "bad request target";
    }
    return {};
}

bool is_websocket_upgrade(const http::request_header<>& req) {
    if (req.method() != http::verb::get) {
        return false;
    }
    auto up = req.find(http::field::upgrade);
    if (up == req.end() || !beast::iequals(trim(up->value()), "websocket")) {
        return false;
    }
    return named_by_connection(req, "upgrade");
}

void build_origin_request(const http::request_header<>& in, http::request_header<>& out,
                          const forward_info& info) {
    const bool websocket = is_websocket_upgrade(in);
    out.method(in.method());
    if (in.method() == http::verb::unknown) {
        out.method_string(in.method_string());
    }
    out.version(11);

    // Absolute-form targets are reduced to origin-form; "*" (OPTIONS) stays as it is.
    std::string_view target = in.target();
    if (!target.empty() && target.front() != '/' && target != "*") {
        auto scheme = target.find("://");
        if (scheme != std::string_view::npos) {
            auto slash = target.find('/', scheme + 3);
            target = slash == std::string_view::npos ? std::string_view{"/"} : target.substr(slash);
        }
    }
    if (info.base_path.empty() || target == "*") {
        out.target(target);
    } else {
        std::string t{info.base_path};
        if (!t.empty() && t.back() == '/' && !target.empty() && target.front() == '/') {
            t.pop_back();
        }
        t.append(target);
        out.target(t);
    }

    std::string forwarded_for;
    std::string_view original_host;
    const bool names = has_connection_token(in);
    for (const auto& f : in) {
        switch (f.name()) {
            case http::field::host:
                original_host = f.value();
                continue;
            case http::field::content_length:
            case http::field::expect:  // the gateway answers 100-continue itself
                continue;
            default:
                break;
        }
        if (is_hop_by_hop(f)) {
            continue;
        }
        if (f.name() == http::field::unknown) {
            auto name = f.name_string();
            if (beast::iequals(name, "x-forwarded-for")) {
                if (!forwarded_for.empty()) {
                    forwarded_for += ", ";
                }
                forwarded_for.append(f.value());
                continue;
            }
            if (beast::iequals(name, "x-forwarded-proto") ||
                beast::iequals(name, "x-forwarded-host")) {
                continue;
            }
        }
        if (names && named_by_connection(in, f.name_string())) {
            continue;
        }
        // The parsed field enum goes along: no second name lookup per copied field.
        out.insert(f.name(), f.name_string(), f.value());
    }
    if (!forwarded_for.empty()) {
        forwarded_for += ", ";
    }
    forwarded_for.append(info.client_ip);
    out.set(http::field::host, info.origin_host);
    out.set("X-Forwarded-For", forwarded_for);
    out.set("X-Forwarded-Proto", info.tls ? "https" : "http");
    if (!original_host.empty()) {
        out.set("X-Forwarded-Host", original_host);
    }

    // Framing follows the client's body; chunked stays chunked, a length stays that length.
    if (in.count(http::field::transfer_encoding) > 0) {
        out.set(http::field::transfer_encoding, "chunked");
    } else if (auto cl = in.find(http::field::content_length); cl != in.end()) {
        out.set(http::field::content_length, trim(cl->value()));
    }
    if (websocket) {
        out.set(http::field::upgrade, "websocket");
        out.set(http::field::connection, "Upgrade");
    }
}

void build_client_response(const http::response_header<>& in, http::response_header<>& out,
                           bool websocket_101) {
    out.result(in.result_int());
    out.reason(in.reason());
    out.version(11);
    const bool names = has_connection_token(in);
    for (const auto& f : in) {
        if (f.name() == http::field::content_length) {
            continue;  // framing is set by the session from the origin parser
        }
        if (is_hop_by_hop(f)) {
            continue;
        }
        if (names && named_by_connection(in, f.name_string())) {
            continue;
        }
        out.insert(f.name(), f.name_string(), f.value());
    }
    if (websocket_101) {
        out.set(http::field::upgrade, "websocket");
        out.set(http::field::connection, "Upgrade");
    }
}

}  // namespace waitroom::gateway
