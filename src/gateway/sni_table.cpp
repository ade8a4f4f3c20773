#include "sni_table.hpp"

#include <array>

namespace waitroom::gateway {

namespace {

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        c = lower(c);
    }
    return out;
}

}  // namespace

void sni_table::add(std::size_t index, const std::vector<std::string>& names) {
    for (const auto& name : names) {
        const std::string n = lowercase(name);
        if (n.size() > 2 && n.compare(0, 2, "*.") == 0) {
            wildcard_.emplace(n.substr(2), index);
        } else if (!n.empty()) {
            exact_.emplace(n, index);
        }
    }
}

std::size_t sni_table::select(std::string_view server_name) const {
    if (server_name.empty() || server_name.size() > max_name) {
        return 0;
    }
    // The client's bytes, lower-cased on the stack: a handshake allocates nothing here.
    std::array<char, max_name> buf{};
    for (std::size_t i = 0; i < server_name.size(); ++i) {
        buf[i] = lower(server_name[i]);
    }
    const std::string_view name(buf.data(), server_name.size());
    if (auto it = exact_.find(name); it != exact_.end()) {
        return it->second;
    }
    const auto dot = name.find('.');
    if (dot == 0 || dot == std::string_view::npos || dot + 1 == name.size()) {
        return 0;
    }
    if (auto it = wildcard_.find(name.substr(dot + 1)); it != wildcard_.end()) {
        return it->second;
    }
    return 0;
}

}  // namespace waitroom::gateway
