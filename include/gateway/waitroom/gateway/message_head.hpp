#pragma once
// A parsed HTTP/1.1 message head, kept flat: the start line and the fields in arrival order, as
// records over one text buffer. It offers the part of Beast's header interface the gateway uses
// (iteration, lookup by field enum or name, insert/set/erase) without Beast's per-field node
// allocation and ordered index. A session keeps its two heads for its whole life and clears them
// per request, so their buffers keep their capacity: parsing a head allocates nothing.
//
// A string_view this returns (a value, the target, …) stays valid until the head is changed or
// cleared.

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace waitroom::gateway {

class field_list {
  public:
    using field = boost::beast::http::field;

    // Where one field's name and value sit in the text buffer.
    struct entry {
        field name;
        std::uint32_t name_at, name_size, value_at, value_size;
        bool marked;  // scratch of remove_if
    };

    // One field: what `*it` gives while iterating, and `it->value()`.
    class field_ref {
      public:
        field_ref(const char* text, const entry& e) : text_(text), e_(&e) {}
        field name() const { return e_->name; }
        std::string_view name_string() const { return {text_ + e_->name_at, e_->name_size}; }
        std::string_view value() const { return {text_ + e_->value_at, e_->value_size}; }

      private:
        const char* text_;
        const entry* e_;
    };
    using value_type = field_ref;

    class const_iterator {
      public:
        using value_type = field_ref;
        using difference_type = std::ptrdiff_t;

        field_ref operator*() const { return l_->at(i_); }
        struct arrow {
            field_ref f;
            const field_ref* operator->() const { return &f; }
        };
        arrow operator->() const { return {l_->at(i_)}; }
        const_iterator& operator++() {
            ++i_;
            return *this;
        }
        const_iterator operator++(int) {
            auto old = *this;
            ++i_;
            return old;
        }
        bool operator==(const const_iterator& o) const { return i_ == o.i_; }
        bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

      private:
        friend class field_list;
        const_iterator(const field_list* l, std::size_t i) : l_(l), i_(i) {}
        const field_list* l_;
        std::size_t i_;
    };
    using iterator = const_iterator;

    const_iterator begin() const { return {this, 0}; }
    const_iterator end() const { return {this, entries_.size()}; }
    std::size_t size() const { return entries_.size(); }

    // The first field with this name, or end().
    const_iterator find(field name) const;
    const_iterator find(std::string_view name) const;
    // The same with the name's field looked up beforehand (string_to_field(name), once, by a
    // caller that asks for the same name on every request): no hash of the name per call.
    const_iterator find(field name, std::string_view name_string) const;
    std::size_t count(field name) const;
    std::size_t count(std::string_view name) const;
    // The value of the first field with this name, or "".
    std::string_view operator[](field name) const;
    std::string_view operator[](std::string_view name) const;

    // Appends a field (name_string is the name as written; for a known `name`, "" means its
    // canonical spelling).
    void insert(field name, std::string_view name_string, std::string_view value);
    void insert(field name, std::string_view value) { insert(name, {}, value); }
    void insert(std::string_view name, std::string_view value);
    // Replaces every field of that name by one.
    void set(field name, std::string_view value);
    void set(std::string_view name, std::string_view value);
    void erase(field name);
    void erase(std::string_view name);
    // Removes one field; returns the iterator to the field after it.
    const_iterator erase(const_iterator it);
    // Removes the fields `pred(field_ref)` holds for, all judged on the unchanged list first.
    template <class Pred>
    void remove_if(Pred pred) {
        bool any = false;
        for (auto& e : entries_) {
            e.marked = pred(field_ref(text_.data(), e));
            any = any || e.marked;
        }
        if (any) {
            std::erase_if(entries_, [](const entry& e) { return e.marked; });
        }
    }

  protected:
    // Keeps `s` in the text buffer; returns its offset.
    std::uint32_t keep(std::string_view s);
    std::string_view text_at(std::uint32_t at, std::uint32_t size) const {
        return {text_.data() + at, size};
    }
    void clear_fields() {
        text_.clear();
        entries_.clear();
    }

  private:
    field_ref at(std::size_t i) const { return {text_.data(), entries_[i]}; }
    bool matches(const entry& e, field name, std::string_view name_string) const;

    std::string text_;
    std::vector<entry> entries_;
};

// The head of a request: method, target, version and fields.
class request_head : public field_list {
  public:
    using verb = boost::beast::http::verb;

    verb method() const { return method_; }
    std::string_view method_string() const;
    std::string_view target() const { return text_at(target_at_, target_size_); }
    unsigned version() const { return version_; }

    void method(verb v);
    void method_string(std::string_view s);
    void target(std::string_view t);
    void version(unsigned v) { version_ = v; }

    // Empties it for the next message (buffers keep their capacity).
    void clear();

  private:
    verb method_ = verb::get;
    std::uint32_t method_at_ = 0, method_size_ = 0;  // the spelling of an unknown method
    std::uint32_t target_at_ = 0, target_size_ = 0;
    unsigned version_ = 11;
};

// The head of a response: status, reason, version and fields.
class response_head : public field_list {
  public:
    unsigned result_int() const { return status_; }
    // The reason phrase as received, or the standard one when none was.
    std::string_view reason() const;
    unsigned version() const { return version_; }

    void result(unsigned status) { status_ = status; }
    void result(boost::beast::http::status s) { status_ = static_cast<unsigned>(s); }
    void reason(std::string_view r);
    void version(unsigned v) { version_ = v; }

    void clear();

  private:
    unsigned status_ = 200;
    std::uint32_t reason_at_ = 0, reason_size_ = 0;
    unsigned version_ = 11;
};

}  // namespace waitroom::gateway
