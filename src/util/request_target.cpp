#include "waitroom/util/request_target.hpp"

#include <array>
#include <cstdint>
#include <cstring>

namespace waitroom::util {

namespace {

// How a byte of a path is treated.
enum class cls : std::uint8_t {
    refused,  // controls, space, DEL, "\", "#": 400
    raw,      // unreserved, sub-delims, ":" and "@": kept as they are
    escape,   // any other byte ("<>^`{|}\"", ≥ 0x80): written as %XX
    percent,  // "%"
    slash,    // "/"
    query,    // "?": ends the path
};

constexpr std::array<cls, 256> make_classes() {
    std::array<cls, 256> t{};
    for (unsigned c = 0; c < 256; ++c) {
        t[c] = cls::escape;
    }
    for (unsigned c = 0; c < 0x21; ++c) {
        t[c] = cls::refused;
    }
    t[0x7f] = cls::refused;
    t['\\'] = cls::refused;
    t['#'] = cls::refused;
    for (unsigned c = 'A'; c <= 'Z'; ++c) {
        t[c] = cls::raw;
    }
    for (unsigned c = 'a'; c <= 'z'; ++c) {
        t[c] = cls::raw;
    }
    for (unsigned c = '0'; c <= '9'; ++c) {
        t[c] = cls::raw;
    }
    for (char c : std::string_view("-._~!$&'()*+,;=:@")) {
        t[static_cast<unsigned char>(c)] = cls::raw;
    }
    t['%'] = cls::percent;
    t['/'] = cls::slash;
    t['?'] = cls::query;
    return t;
}

constexpr std::array<cls, 256> classes = make_classes();

cls class_of(char c) {
    return classes[static_cast<unsigned char>(c)];
}

bool is_unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

void append_escape(std::string& out, unsigned char c) {
    static constexpr char digits[] = "0123456789ABCDEF";
    out += '%';
    out += digits[c >> 4];
    out += digits[c & 0xf];
}

char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// The part of a segment before its parameters.
std::string_view segment_name(std::string_view seg) {
    return seg.substr(0, seg.find(';'));
}

bool is_dot_name(std::string_view name) {
    return name == "." || name == "..";
}

// True when `path` (no query) needs no rewriting: the common case, answered without a copy.
// Anything unusual goes to the slow path, which also reports what is wrong.
bool already_canonical(std::string_view path) {
    const std::size_t n = path.size();
    if (n == 0 || path[0] != '/') {
        return false;
    }
    for (std::size_t i = 0; i < n; ++i) {
        switch (class_of(path[i])) {
            case cls::raw:
                break;
            case cls::slash: {
                std::size_t end = path.find('/', i + 1);
                std::string_view seg = path.substr(
                    i + 1, end == std::string_view::npos ? std::string_view::npos : end - i - 1);
                std::string_view name = segment_name(seg);
                // "//", "/./", "/../" and "/;x" all change; a trailing "/" does not.
                if (is_dot_name(name) || (name.empty() && end != std::string_view::npos) ||
                    (name.empty() && !seg.empty())) {
                    return false;
                }
                break;
            }
            case cls::percent: {
                // An escape is canonical when its hex is upper case and it had to be escaped.
                if (i + 2 >= n) {
                    return false;
                }
                char h = path[i + 1];
                char l = path[i + 2];
                bool upper_hex = hex_value(h) >= 0 && hex_value(l) >= 0 &&
                                 !(h >= 'a' && h <= 'f') && !(l >= 'a' && l <= 'f');
                if (!upper_hex) {
                    return false;
                }
                auto v = static_cast<unsigned char>(hex_value(h) * 16 + hex_value(l));
                if (is_unreserved(v) || v == '/' || v == '\\' || v < 0x20 || v == 0x7f) {
                    return false;
                }
                i += 2;
                break;
            }
            default:
                return false;
        }
    }
    return true;
}

// Writes the canonical form of `path` (origin-form path, no query) into `out`. Returns the
// problem, or "" when it is fine.
std::string_view canonicalize_path(std::string_view path, std::string& out) {
    out.clear();
    std::string seg;  // one decoded segment; short, so it stays in the small-string buffer
    bool trailing_slash = false;
    std::size_t i = 1;  // path[0] == '/'
    const std::size_t n = path.size();
    while (true) {
        seg.clear();
        while (i < n && path[i] != '/') {
            char c = path[i];
            switch (class_of(c)) {
                case cls::raw:
                    seg += c;
                    ++i;
                    break;
                case cls::escape:
                    append_escape(seg, static_cast<unsigned char>(c));
                    ++i;
                    break;
                case cls::percent: {
                    if (i + 2 >= n) {
                        return "bad percent-encoding in path";
                    }
                    int h = hex_value(path[i + 1]);
                    int l = hex_value(path[i + 2]);
                    if (h < 0 || l < 0) {
                        return "bad percent-encoding in path";
                    }
                    auto v = static_cast<unsigned char>(h * 16 + l);
                    if (v == '/' || v == '\\') {
                        return "encoded / or \\ in path";
                    }
                    if (v < 0x20 || v == 0x7f) {
                        return "encoded control character in path";
                    }
                    if (is_unreserved(v)) {
                        seg += static_cast<char>(v);
                    } else {
                        append_escape(seg, v);
                    }
                    i += 3;
                    break;
                }
                default:
                    return c == '\\' ? std::string_view("raw \\ in path")
                                     : std::string_view("control, space or # in path");
            }
        }
        const bool last = i >= n;
        std::string_view name = segment_name(seg);
        if (name == ".") {
            trailing_slash = last;
        } else if (name == "..") {
            auto cut = out.rfind('/');
            if (cut == std::string::npos) {
                return "path climbs above the root";
            }
            out.resize(cut);
            trailing_slash = last;
        } else if (name.empty()) {
            // Merged: "//" is "/", and "/;x" is an empty segment with a parameter.
            trailing_slash = last;
        } else {
            out += '/';
            out += seg;
            trailing_slash = false;
        }
        if (last) {
            break;
        }
        ++i;  // the '/'
    }
    if (trailing_slash || out.empty()) {
        out += '/';
    }
    return {};
}

// The canonical path without its segment parameters, into `buf` when there are any.
std::string_view strip_parameters(std::string_view path, std::string& buf) {
    if (path.find(';') == std::string_view::npos) {
        return path;
    }
    buf.clear();
    bool in_param = false;
    for (char c : path) {
        if (c == '/') {
            in_param = false;
        } else if (c == ';') {
            in_param = true;
        }
        if (!in_param) {
            buf += c;
        }
    }
    return buf;
}

// Fills path, match_path and query of `out` from an origin-form path-and-query.
void read_path_and_query(std::string_view pq, request_target& out, target_buffers& buf) {
    auto q = pq.find('?');
    std::string_view path = pq.substr(0, q);
    if (q != std::string_view::npos) {
        std::string_view query = pq.substr(q);
        for (char c : query) {
            auto u = static_cast<unsigned char>(c);
            if (u <= 0x20 || u == 0x7f || c == '#') {
                out.status = target_status::bad_request;
                out.problem = "control, space or # in query";
                return;
            }
        }
        out.query = query;
    }
    if (path.empty()) {
        path = "/";  // absolute-form with an empty path (RFC 9112 §3.2.2)
    }
    if (already_canonical(path)) {
        out.path = path;
    } else {
        auto problem = canonicalize_path(path, buf.path);
        if (!problem.empty()) {
            out.status = target_status::bad_request;
            out.problem = problem;
            return;
        }
        out.path = buf.path;
    }
    out.match_path = strip_parameters(out.path, buf.match);
}

bool iequals_prefix(std::string_view s, std::string_view lower_prefix) {
    if (s.size() < lower_prefix.size()) {
        return false;
    }
    for (std::size_t i = 0; i < lower_prefix.size(); ++i) {
        if (lower(s[i]) != lower_prefix[i]) {
            return false;
        }
    }
    return true;
}

// A loop, not find_first_not_of("0123456789"): libstdc++ makes that a memchr per character.
bool all_digits(std::string_view s) {
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
    }
    return true;
}

// Four dot-separated decimal parts of 1-3 digits, each at most 255, no leading zero: one pass
// (the Host of a request sent to an address comes here every time).
bool valid_ipv4(std::string_view h) {
    int parts = 0;
    int digits = 0;  // in the current part
    int value = 0;
    bool leading_zero = false;  // the current part starts with '0'
    for (char c : h) {
        if (c == '.') {
            if (digits == 0) {
                return false;
            }
            ++parts;
            digits = 0;
            value = 0;
            continue;
        }
        if (c < '0' || c > '9' || digits == 3 || (digits > 0 && leading_zero)) {
            return false;
        }
        if (digits == 0) {
            leading_zero = c == '0';
        }
        value = value * 10 + (c - '0');
        if (value > 255) {
            return false;
        }
        ++digits;
    }
    return digits > 0 && parts == 3;
}

bool valid_ipv6(std::string_view h) {
    // Hex groups, ":" and an optional dotted IPv4 tail; at most one "::".
    if (h.size() < 2 || h.size() > 45) {
        return false;
    }
    if (h.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos) {
        return false;
    }
    auto dc = h.find("::");
    if (dc != std::string_view::npos && h.find("::", dc + 1) != std::string_view::npos) {
        return false;
    }
    int groups = 0;
    std::size_t i = 0;
    while (i < h.size()) {
        if (h[i] == ':') {
            ++i;
            continue;
        }
        std::size_t end = h.find(':', i);
        if (end == std::string_view::npos) {
            end = h.size();
        }
        std::string_view g = h.substr(i, end - i);
        if (g.find('.') != std::string_view::npos) {
            if (end != h.size() || !valid_ipv4(g)) {
                return false;
            }
            groups += 2;
        } else {
            if (g.size() > 4) {
                return false;
            }
            ++groups;
        }
        i = end;
    }
    if (h.find(":::") != std::string_view::npos) {
        return false;
    }
    if ((h.front() == ':' && !h.starts_with("::")) || (h.back() == ':' && !h.ends_with("::"))) {
        return false;
    }
    return dc == std::string_view::npos ? groups == 8 : groups < 8;
}

}  // namespace

host_view parse_host(std::string_view host, std::string& buf) {
    host_view out;
    std::string_view name;
    std::string_view port;
    bool has_port = false;
    bool upper = false;
    if (!host.empty() && host.front() == '[') {
        auto close = host.find(']');
        if (close == std::string_view::npos || !valid_ipv6(host.substr(1, close - 1))) {
            return out;
        }
        name = host.substr(0, close + 1);
        for (char c : name) {
            upper = upper || (c >= 'A' && c <= 'Z');
        }
        std::string_view rest = host.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') {
                return out;
            }
            has_port = true;
            port = rest.substr(1);
        }
    } else {
        auto colon = host.find(':');
        name = host.substr(0, colon);
        if (colon != std::string_view::npos) {
            has_port = true;
            port = host.substr(colon + 1);
        }
        if (name.size() > 1 && name.back() == '.') {
            name.remove_suffix(1);  // "shop.example.com." is the same name
        }
        if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') {
            return out;
        }
        // One pass (every Host of every request comes here): the characters, no empty label,
        // upper case, and whether the last label is all digits.
        bool digits_only_label = true;  // so far in the current label
        char prev = 0;
        for (char c : name) {
            if (c == '.') {
                if (prev == '.') {
                    return out;
                }
                digits_only_label = true;
            } else if (c >= '0' && c <= '9') {
            } else if ((c >= 'a' && c <= 'z') || c == '-' || c == '_') {
                digits_only_label = false;
            } else if (c >= 'A' && c <= 'Z') {
                digits_only_label = false;
                upper = true;
            } else {
                return out;
            }
            prev = c;
        }
        if (digits_only_label && !valid_ipv4(name)) {
            return out;  // "1.2.3.999", "127.1": not a name, not an address
        }
    }
    if (port.size() > 5 || !all_digits(port)) {
        return out;
    }
    if (port.size() == 5 && port > "65535") {
        return out;
    }
    // Views when nothing changes: no upper case, no trailing dot, no empty port.
    const bool same_authority = !upper && (!has_port || !port.empty()) &&
                                name.size() + (has_port ? port.size() + 1 : 0) == host.size();
    out.valid = true;
    if (same_authority) {
        out.name = name;
        out.authority = host;
        return out;
    }
    buf.clear();
    for (char c : name) {
        buf += lower(c);
    }
    if (!port.empty()) {
        buf += ':';
        buf += port;
    }
    out.authority = buf;
    out.name = out.authority.substr(0, name.size());
    return out;
}

request_target parse_request_target(std::string_view method, std::string_view target,
                                    target_buffers& buf) {
    request_target out;
    auto refuse = [&](std::string_view why) {
        out.status = target_status::bad_request;
        out.problem = why;
        return out;
    };
    if (method == "CONNECT") {
        out.status = target_status::method_not_allowed;
        out.problem = "CONNECT is not supported";
        return out;
    }
    if (target.empty()) {
        return refuse("empty request target");
    }
    if (std::memchr(target.data(), '#', target.size()) != nullptr) {
        return refuse("fragment in request target");
    }
    if (target.front() == '/') {
        read_path_and_query(target, out, buf);
        return out;
    }
    if (target == "*") {
        if (method != "OPTIONS") {
            return refuse("\"*\" is for OPTIONS only");
        }
        out.form = target_form::asterisk;
        out.path = "/";
        out.match_path = "/";
        return out;
    }
    std::size_t skip = 0;
    if (iequals_prefix(target, "http://")) {
        skip = 7;
    } else if (iequals_prefix(target, "https://")) {
        skip = 8;
    } else {
        return refuse("request target is not origin-form, absolute-form or *");
    }
    std::string_view rest = target.substr(skip);
    auto end = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, end);
    if (authority.empty() || authority.find('@') != std::string_view::npos) {
        return refuse("absolute-form target without a plain authority");
    }
    out.form = target_form::absolute;
    out.authority = authority;
    read_path_and_query(end == std::string_view::npos ? std::string_view{} : rest.substr(end), out,
                        buf);
    return out;
}

canonical_request canonicalize_request(std::string_view method, std::string_view target,
                                       const std::string_view* host_field, bool http11,
                                       target_buffers& buf) {
    canonical_request out;
    out.target = parse_request_target(method, target, buf);
    if (out.target.status != target_status::ok) {
        out.status = out.target.status;
        out.problem = out.target.problem;
        return out;
    }
    auto refuse = [&](std::string_view why) {
        out.status = target_status::bad_request;
        out.problem = why;
        return out;
    };
    if (host_field == nullptr && http11) {
        return refuse("HTTP/1.1 request without Host");
    }
    if (host_field != nullptr) {
        out.host = parse_host(*host_field, buf.host);
        if (!out.host.valid) {
            return refuse("Host is not a valid authority");
        }
    }
    if (out.target.form == target_form::absolute) {
        // The target's authority replaces Host (RFC 9112 §3.2.2). The Host buffer is reused:
        // the Host value is not needed any more.
        out.host = parse_host(out.target.authority, buf.host);
        if (!out.host.valid) {
            return refuse("absolute-form authority is not a valid host");
        }
    }
    return out;
}

bool is_canonical_path(std::string_view path) {
    if (path.find_first_of("?;") != std::string_view::npos) {
        return false;
    }
    if (already_canonical(path)) {
        return true;
    }
    std::string out;
    return canonicalize_path(path, out).empty() && out == path;
}

}  // namespace waitroom::util
