#include "waitroom/gateway/message_head.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include <vector>

namespace waitroom::gateway {

namespace http = boost::beast::http;

std::uint32_t field_list::keep(std::string_view s) {
    const auto at = static_cast<std::uint32_t>(text_.size());
    if (!s.empty() && s.data() >= text_.data() && s.data() < text_.data() + text_.size()) {
        // A piece of this very buffer (the target set again…): append may move it.
        const std::size_t from = static_cast<std::size_t>(s.data() - text_.data());
        text_.append(text_, from, s.size());
        return at;
    }
    text_.append(s);
    return at;
}

bool field_list::matches(const entry& e, field name, std::string_view name_string) const {
    if (name != field::unknown) {
        return e.name == name;
    }
    return e.name == field::unknown &&
           boost::beast::iequals(text_at(e.name_at, e.name_size), name_string);
}

field_list::const_iterator field_list::find(field name) const {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].name == name) {
            return {this, i};
        }
    }
    return end();
}

field_list::const_iterator field_list::find(std::string_view name) const {
    return find(http::string_to_field(name), name);
}

field_list::const_iterator field_list::find(field name, std::string_view name_string) const {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (matches(entries_[i], name, name_string)) {
            return {this, i};
        }
    }
    return end();
}

std::size_t field_list::count(field name) const {
    std::size_t n = 0;
    for (const auto& e : entries_) {
        n += e.name == name ? 1 : 0;
    }
    return n;
}

std::size_t field_list::count(std::string_view name) const {
    const field f = http::string_to_field(name);
    std::size_t n = 0;
    for (const auto& e : entries_) {
        n += matches(e, f, name) ? 1 : 0;
    }
    return n;
}

std::string_view field_list::operator[](field name) const {
    auto it = find(name);
    return it == end() ? std::string_view{} : (*it).value();
}

std::string_view field_list::operator[](std::string_view name) const {
    auto it = find(name);
    return it == end() ? std::string_view{} : (*it).value();
}

void field_list::insert(field name, std::string_view name_string, std::string_view value) {
    if (name_string.empty() && name != field::unknown) {
        auto canonical = http::to_string(name);
        name_string = std::string_view(canonical.data(), canonical.size());
    }
    // A name or value taken from this head (a value copied to another field) would dangle once
    // the first append moves the buffer: copy it out first (rare; never on the parse path).
    const auto inside = [this](std::string_view s) {
        return !s.empty() && s.data() >= text_.data() && s.data() < text_.data() + text_.size();
    };
    if (inside(name_string) || inside(value)) {
        const std::string n(name_string), v(value);
        return insert(name, n, v);
    }
    entry e{};
    e.name = name;
    e.name_size = static_cast<std::uint32_t>(name_string.size());
    e.name_at = keep(name_string);
    e.value_size = static_cast<std::uint32_t>(value.size());
    e.value_at = keep(value);
    entries_.push_back(e);
}

void field_list::insert(std::string_view name, std::string_view value) {
    insert(http::string_to_field(name), name, value);
}

void field_list::set(field name, std::string_view value) {
    erase(name);
    insert(name, value);
}

void field_list::set(std::string_view name, std::string_view value) {
    erase(name);
    insert(name, value);
}

void field_list::erase(field name) {
    std::erase_if(entries_, [&](const entry& e) { return e.name == name; });
}

void field_list::erase(std::string_view name) {
    const field f = http::string_to_field(name);
    std::erase_if(entries_, [&](const entry& e) { return matches(e, f, name); });
}

field_list::const_iterator field_list::erase(const_iterator it) {
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it.i_));
    return {this, it.i_};
}

std::string_view request_head::method_string() const {
    if (method_ != verb::unknown) {
        auto s = http::to_string(method_);
        return {s.data(), s.size()};
    }
    return text_at(method_at_, method_size_);
}

void request_head::method(verb v) {
    method_ = v;
    method_size_ = 0;
}

void request_head::method_string(std::string_view s) {
    method_ = http::string_to_verb(s);
    method_size_ = static_cast<std::uint32_t>(s.size());
    method_at_ = method_ == verb::unknown ? keep(s) : 0;
}

void request_head::target(std::string_view t) {
    target_size_ = static_cast<std::uint32_t>(t.size());
    target_at_ = keep(t);
}

void request_head::clear() {
    clear_fields();
    method_ = verb::get;
    method_at_ = method_size_ = target_at_ = target_size_ = 0;
    version_ = 11;
}

std::string_view response_head::reason() const {
    if (reason_size_ > 0) {
        return text_at(reason_at_, reason_size_);
    }
    auto r = http::obsolete_reason(http::int_to_status(status_));
    return {r.data(), r.size()};
}

void response_head::reason(std::string_view r) {
    reason_size_ = static_cast<std::uint32_t>(r.size());
    reason_at_ = keep(r);
}

void response_head::clear() {
    clear_fields();
    status_ = 200;
    reason_at_ = reason_size_ = 0;
    version_ = 11;
}

}  // namespace waitroom::gateway
