#pragma once
// Redis replies written by hand, for the tests of the store's wire format (redis_protocol).

#include <cstdint>
#include <string>
#include <vector>

#include "redis_protocol.hpp"

namespace waitroom::state::redis::test_values {

inline value integer(std::int64_t n) {
    value v;
    v.type = value::kind::integer;
    v.integer = n;
    return v;
}

inline value text(std::string s, value::kind k = value::kind::string) {
    value v;
    v.type = k;
    v.str = std::move(s);
    return v;
}

inline value error(std::string s) { return text(std::move(s), value::kind::error); }

inline value array(std::vector<value> e) {
    value v;
    v.type = value::kind::array;
    v.elements = std::move(e);
    return v;
}

}  // namespace waitroom::state::redis::test_values
