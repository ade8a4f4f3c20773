#include "accept_encoding.hpp"

#include <boost/beast/core/string.hpp>

#include <optional>

namespace waitroom::gateway {

namespace {

bool is_ows(char c) noexcept {
    return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_ows(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_ows(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

// RFC 9110 §5.6.2 tchar.
bool is_tchar(char c) noexcept {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    return std::string_view{"!#$%&'*+-.^_`|~"}.find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) noexcept {
    if (s.empty()) {
        return false;
    }
    for (char c : s) {
        if (!is_tchar(c)) {
            return false;
        }
    }
    return true;
}

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
std::optional<int> parse_qvalue(std::string_view s) noexcept {
    if (s.empty() || s.size() > 5 || (s[0] != '0' && s[0] != '1')) {
        return std::nullopt;
    }
    int value = (s[0] - '0') * 1000;
    if (s.size() == 1) {
        return value;
    }
    if (s[1] != '.') {
        return std::nullopt;
    }
    int scale = 100;
    for (char c : s.substr(2)) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        value += (c - '0') * scale;
        scale /= 10;
    }
    return value <= 1000 ? std::optional<int>{value} : std::nullopt;
}

// The weight an entry's parameters give ("" → 1), or none when they are not one `q=` weight.
std::optional<int> entry_weight(std::string_view params) noexcept {
    params = trim(params);
    if (params.empty()) {
        return 1000;
    }
    if (params.front() != ';') {
        return std::nullopt;
    }
    params = trim(params.substr(1));
    if (params.size() < 2 || (params[0] != 'q' && params[0] != 'Q') || params[1] != '=') {
        return std::nullopt;
    }
    return parse_qvalue(params.substr(2));
}

}  // namespace

void accept_encoding::read(std::string_view field_value) noexcept {
    while (!field_value.empty()) {
        const auto comma = field_value.find(',');
        read_entry(field_value.substr(0, comma));
        if (comma == std::string_view::npos) {
            break;
        }
        field_value.remove_prefix(comma + 1);
    }
}

void accept_encoding::read_entry(std::string_view entry) noexcept {
    entry = trim(entry);
    const auto semicolon = entry.find(';');
    const std::string_view coding = trim(entry.substr(0, semicolon));
    if (!is_token(coding)) {
        return;  // an empty list element, or not a coding
    }
    const auto weight = entry_weight(semicolon == std::string_view::npos ? std::string_view{}
                                                                         : entry.substr(semicolon));
    if (!weight) {
        return;
    }
    using boost::beast::iequals;
    int* slot = nullptr;
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) {
        slot = &w_.gzip;
    } else if (iequals(coding, "br")) {
        slot = &w_.br;
    } else if (iequals(coding, "identity")) {
        slot = &w_.identity;
    } else if (coding == "*") {
        slot = &w_.any;
    }
    if (slot != nullptr && *slot < 0) {
        *slot = *weight;
    }
}

pages::content_coding accept_encoding::best(bool has_gzip, bool has_br) const noexcept {
    const auto weight_of = [&](int own, bool offered) {
        if (!offered) {
            return 0;
        }
        return own >= 0 ? own : (w_.any >= 0 ? w_.any : 0);
    };
    const int br = weight_of(w_.br, has_br);
    const int gzip = weight_of(w_.gzip, has_gzip);
    const int identity = weight_of(w_.identity, true);
    if (br > 0 && br >= gzip && br >= identity) {
        return pages::content_coding::br;
    }
    if (gzip > 0 && gzip >= identity) {
        return pages::content_coding::gzip;
    }
    return pages::content_coding::identity;
}

}  // namespace waitroom::gateway
