#include "chunk_line.hpp"

#include <cstdint>
#include <string_view>

namespace waitroom::gateway {

namespace {

// Where the reading of a chunk line stands: what the next byte may be.
enum class at : std::uint8_t {
    size_first,    // the first hex digit of chunk-size
    size,          // more hex digits, or what follows them
    after_item,    // after chunk-size or an extension: BWS, ";" or CR
    before_semi,   // in BWS after an item: more of it, or ";"
    after_semi,    // BWS, then an extension's name
    name,          // more of the name, BWS, ";", "=" or CR
    after_name,    // in BWS after a name: more of it, ";" or "="
    after_equals,  // BWS, then a token or a quoted string
    token_value,   // more of the value, BWS, ";" or CR
    quoted,        // in a quoted string
    quoted_pair,   // the byte a backslash escapes
    cr,            // the LF of the line's CRLF
    done,          // the line has ended
    bad,           // no valid line goes on this way
};

bool is_hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool is_token(unsigned char c) {
    static constexpr std::string_view marks = "!#$%&'*+-.^_`|~";
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != 0 && marks.find(static_cast<char>(c)) != std::string_view::npos);
}

bool is_blank(unsigned char c) {
    return c == ' ' || c == '\t';
}

// HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text: anything printable but DQUOTE and "\".
bool is_qdtext(unsigned char c) {
    return is_blank(c) || (c >= 0x21 && c <= 0x7e && c != '"' && c != '\\') || c >= 0x80;
}

// HTAB / SP / VCHAR / obs-text.
bool is_escapable(unsigned char c) {
    return is_blank(c) || (c >= 0x21 && c <= 0x7e) || c >= 0x80;
}

// After an item (chunk-size, a name, a value) where the line may end or another one begin.
at after_item(unsigned char c) {
    if (is_blank(c)) {
        return at::before_semi;
    }
    if (c == ';') {
        return at::after_semi;
    }
    return c == '\r' ? at::cr : at::bad;
}

at after_name(unsigned char c, bool blank_before) {
    if (c == ';') {
        return at::after_semi;
    }
    if (c == '=') {
        return at::after_equals;
    }
    if (is_blank(c)) {
        return at::after_name;
    }
    return c == '\r' && !blank_before ? at::cr : at::bad;
}

at after_equals(unsigned char c) {
    if (is_blank(c)) {
        return at::after_equals;
    }
    if (c == '"') {
        return at::quoted;
    }
    return is_token(c) ? at::token_value : at::bad;
}

at quoted(unsigned char c) {
    if (c == '"') {
        return at::after_item;
    }
    if (c == '\\') {
        return at::quoted_pair;
    }
    return is_qdtext(c) ? at::quoted : at::bad;
}

at step(at state, unsigned char c) {
    switch (state) {
        case at::size_first:
            return is_hex(c) ? at::size : at::bad;
        case at::size:
            return is_hex(c) ? at::size : after_item(c);
        case at::after_item:
            return after_item(c);
        case at::before_semi:
            return is_blank(c) ? at::before_semi : (c == ';' ? at::after_semi : at::bad);
        case at::after_semi:
            return is_blank(c) ? at::after_semi : (is_token(c) ? at::name : at::bad);
        case at::name:
            return is_token(c) ? at::name : after_name(c, false);
        case at::after_name:
            return after_name(c, true);
        case at::after_equals:
            return after_equals(c);
        case at::token_value:
            return is_token(c) ? at::token_value : after_item(c);
        case at::quoted:
            return quoted(c);
        case at::quoted_pair:
            return is_escapable(c) ? at::quoted : at::bad;
        case at::cr:
            return c == '\n' ? at::done : at::bad;
        case at::done:
        case at::bad:
            break;
    }
    return at::bad;
}

}  // namespace

chunk_line_scan check_chunk_line(std::string_view bytes) {
    at state = at::size_first;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        state = step(state, static_cast<unsigned char>(bytes[i]));
        if (state == at::bad) {
            return {chunk_line_scan::verdict::malformed, 0};
        }
        if (state == at::done) {
            return {chunk_line_scan::verdict::complete, i + 1};
        }
    }
    return {};
}

bool valid_chunk_extensions(std::string_view extensions) {
    at state = at::after_item;
    for (const char c : extensions) {
        state = step(state, static_cast<unsigned char>(c));
        if (state == at::bad || state == at::cr) {
            return false;  // a CR belongs after the extensions, not in them
        }
    }
    // Where a CR may come next.
    return step(state, '\r') == at::cr;
}

}  // namespace waitroom::gateway
