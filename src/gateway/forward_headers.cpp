// Header rewriting for forwarding. Header names are compared case-insensitively through
// Beast's field enum where one exists, by string otherwise.
#include "forward_headers.hpp"

#include "common.hpp"
#include "outgoing_message.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>

namespace waitroom::gateway {

namespace {

bool has_bad_char(std::string_view v) {
    // memchr is vectorised: three passes over a long Cookie value beat one loop over it.
    return std::memchr(v.data(), '\r', v.size()) != nullptr ||
           std::memchr(v.data(), '\n', v.size()) != nullptr ||
           std::memchr(v.data(), '\0', v.size()) != nullptr;
}

std::optional<std::uint64_t> parse_length(std::string_view v) {
    v = trim_ows(v);
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc{} || p != v.data() + v.size()) {
        return std::nullopt;
    }
    return n;
}

// Fields never forwarded in either direction (besides those named by Connection).
bool is_hop_by_hop(const field_list::value_type& f) {
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
    return name.size() >= 6 && (name[0] | 0x20) == 'p' &&
           beast::iequals(name.substr(0, 6), "proxy-");
}

// True when one of the message's Connection fields lists `name`.
template <class Head>
bool named_by_connection(const Head& h, std::string_view name) {
    for (const auto& f : h) {
        if (f.name() != http::field::connection) {
            continue;
        }
        for (auto token : http::token_list{f.value()}) {
            if (beast::iequals(token, name)) {
                return true;
            }
        }
    }
    return false;
}

// The same question asked for every field of a message: the Connection fields are read once
// (a handful of names kept), not once per field. Past that handful it reads them again.
template <class Head>
class connection_names {
  public:
    explicit connection_names(const Head& h) : h_(h) {
        for (const auto& f : h) {
            if (f.name() != http::field::connection) {
                continue;
            }
            for (auto token : http::token_list{f.value()}) {
                // The usual token names a field that is hop-by-hop anyway: keeping it would
                // only cost a comparison per field.
                if (beast::iequals(token, "keep-alive")) {
                    continue;
                }
                if (size_ == names_.size()) {
                    overflow_ = true;
                    return;
                }
                names_[size_++] = token;
            }
        }
    }

    bool contains(std::string_view name) const {
        if (size_ == 0 && !overflow_) {
            return false;
        }
        if (overflow_) {
            return named_by_connection(h_, name);
        }
        for (std::size_t i = 0; i < size_; ++i) {
            if (beast::iequals(names_[i], name)) {
                return true;
            }
        }
        return false;
    }

  private:
    const Head& h_;
    std::array<std::string_view, 8> names_;
    std::size_t size_ = 0;
    bool overflow_ = false;
};

}  // namespace

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

std::string_view request_problem(const request_head& req) {
    std::optional<std::uint64_t> length;
    bool has_te = false;
    bool has_host = false;
    for (const auto& f : req) {
        if (f.name() == http::field::host) {
            if (has_host) {
                // Rooms route on the first, the origin would see another (RFC 9112 §3.2).
                return "more than one Host";
            }
            has_host = true;
        }
        // A parsed name is a token (the parser refuses anything else); a value is checked.
        if (has_bad_char(f.value())) {
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
            if (has_te || !beast::iequals(trim_ows(f.value()), "chunked")) {
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

bool is_websocket_upgrade(const request_head& req) {
    if (req.method() != http::verb::get) {
        return false;
    }
    auto up = req.find(http::field::upgrade);
    if (up == req.end() || !beast::iequals(trim_ows(up->value()), "websocket")) {
        return false;
    }
    return named_by_connection(req, "upgrade");
}

namespace {

bool is_forwarded_for(const field_list::value_type& f) {
    return f.name() == http::field::unknown && beast::iequals(f.name_string(), "x-forwarded-for");
}

// Field names equal ignoring case and reading `_` as `-`: CGI-style origins (PHP, WSGI) see
// X_Real_IP and X-Real-IP as one variable, HTTP_X_REAL_IP, so a field the gateway sets or removes
// must not pass under its other spelling.
bool same_cgi_name(std::string_view a, std::string_view b) {
    auto fold = [](char c) {
        return c == '_' ? '-' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    };
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                              [&](char x, char y) { return fold(x) == fold(y); });
}

bool is_dropped(const std::vector<std::string>* drop, std::string_view name) {
    if (drop == nullptr) {
        return false;
    }
    return std::any_of(drop->begin(), drop->end(),
                       [&](const std::string& d) { return same_cgi_name(d, name); });
}

// `Forwarded: for=…;proto=…` (RFC 7239 §4: an IPv6 node is quoted and bracketed).
void append_forwarded(std::string& out, std::string_view ip, bool tls) {
    const bool v6 = ip.find(':') != std::string_view::npos;
    out += "Forwarded: for=";
    out += v6 ? "\"[" : "";
    out += ip;
    out += v6 ? "]\"" : "";
    out += tls ? ";proto=https\r\n" : ";proto=http\r\n";
}

}  // namespace

void write_origin_request(const request_head& in, std::string& out, const forward_info& info) {
    out += in.method_string();
    out += ' ';
    std::string_view path = info.path.empty() ? in.target() : info.path;
    std::string_view query = info.path.empty() ? std::string_view{} : info.query;
    if (!info.base_path.empty() && path != "*") {
        std::string_view base = info.base_path;
        if (base.back() == '/' && !path.empty() && path.front() == '/') {
            base.remove_suffix(1);
        }
        out += base;
    }
    out += path;
    out += query;
    out += " HTTP/1.1\r\n";
    append_field(out, "Host", info.origin_host);

    bool forwarded_for = false;
    bool real_ip = false;
    bool forwarded = false;
    const connection_names names(in);
    for (const auto& f : in) {
        switch (f.name()) {
            case http::field::host:
                continue;
            case http::field::content_length:
            case http::field::expect:  // the gateway answers 100-continue itself
                continue;
            case http::field::forwarded:
                if (!info.pass_client_fields) {
                    forwarded = true;
                    continue;
                }
                break;
            default:
                break;
        }
        if (is_hop_by_hop(f)) {
            continue;
        }
        if (f.name() == http::field::unknown) {
            auto name = f.name_string();
            if (is_forwarded_for(f)) {
                forwarded_for = true;
                continue;
            }
            // X_Forwarded_For is never part of a chain: only the gateway's spelling is read.
            if (same_cgi_name(name, "x-forwarded-for") ||
                same_cgi_name(name, "x-forwarded-proto") ||
                same_cgi_name(name, "x-forwarded-host")) {
                continue;
            }
            if (!info.pass_client_fields && same_cgi_name(name, "x-real-ip")) {
                real_ip = true;
                continue;
            }
        }
        if (names.contains(f.name_string()) || is_dropped(info.drop_fields, f.name_string())) {
            continue;
        }
        append_field(out, f.name_string(), f.value());
    }
    // Kept: the client's X-Forwarded-For values, in order, then the peer's own address.
    // Overwritten: the peer alone. X-Real-IP and Forwarded, when sent and not passed, become the
    // gateway's (the client IP).
    out += "X-Forwarded-For: ";
    if (forwarded_for && info.keep_forwarded) {
        for (const auto& f : in) {
            if (is_forwarded_for(f)) {
                out += f.value();
                out += ", ";
            }
        }
    }
    out += info.peer_ip.empty() ? info.client_ip : info.peer_ip;
    out += "\r\n";
    if (real_ip) {
        append_field(out, "X-Real-IP", info.client_ip);
    }
    if (forwarded) {
        append_forwarded(out, info.client_ip, info.tls);
    }
    append_field(out, "X-Forwarded-Proto", info.tls ? "https" : "http");
    if (!info.forwarded_host.empty()) {
        append_field(out, "X-Forwarded-Host", info.forwarded_host);
    }

    // Framing follows the client's body; chunked stays chunked, a length stays that length.
    if (in.count(http::field::transfer_encoding) > 0) {
        append_field(out, "Transfer-Encoding", "chunked");
    } else if (auto cl = in.find(http::field::content_length); cl != in.end()) {
        append_field(out, "Content-Length", trim_ows(cl->value()));
    }
    if (is_websocket_upgrade(in)) {
        append_field(out, "Upgrade", "websocket");
        append_field(out, "Connection", "Upgrade");
    }
    out += "\r\n";
}

void strip_hop_by_hop(response_head& res) {
    const connection_names names(res);
    res.remove_if([&](const field_list::value_type& f) {
        return is_hop_by_hop(f) || names.contains(f.name_string());
    });
}

void write_client_response(const response_head& in, std::string& out, const client_framing& how) {
    append_status_line(out, how.version, in.result_int(), in.reason());
    std::string_view origin_length;
    for (const auto& f : in) {
        if (f.name() == http::field::content_length) {
            origin_length = f.value();  // framing is set from `how`
            continue;
        }
        append_field(out, f.name_string(), f.value());
    }
    if (how.extra != nullptr) {
        for (const auto& [name, value] : *how.extra) {
            append_field(out, name, value);
        }
    }
    switch (how.kind) {
        case client_framing::body::as_origin:
            if (!origin_length.empty()) {
                append_field(out, "Content-Length", trim_ows(origin_length));
            }
            break;
        case client_framing::body::length:
            append_field(out, "Content-Length", how.length);
            break;
        case client_framing::body::chunked:
            append_field(out, "Transfer-Encoding", "chunked");
            break;
        case client_framing::body::until_close:
            break;
    }
    if (how.websocket_101) {
        append_field(out, "Upgrade", "websocket");
        append_field(out, "Connection", "Upgrade");
    } else {
        append_connection(out, how.version, how.keep_alive);
    }
    out += "\r\n";
}

}  // namespace waitroom::gateway
