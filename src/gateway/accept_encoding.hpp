#pragma once
// Content negotiation for the answers from memory (RFC 9110 §12.5.3): which form of a rendered
// page (identity, gzip, brotli) a request's Accept-Encoding asks for. One pass over the field
// values, nothing allocated, so a hostile header of thousands of entries costs time linear in
// its size and no memory. Malformed entries are skipped; the rest of the field still counts.
//
// Rules: a coding's weight is its own entry's q (default 1; the first entry for a coding
// counts), else that of `*`, else 0. `x-gzip` is gzip. The best weight above 0 wins, brotli
// before gzip before identity on a tie; identity is weighted only by an `identity` or `*` entry,
// so a client that accepts any compression gets it unless it prefers identity outright. When no
// coding is acceptable (no field, an empty one, `identity;q=0` alone…), identity is sent: the
// RFC allows it even where identity was refused.

#include <string_view>

#include "waitroom/pages/page_encoding.hpp"

namespace waitroom::gateway {

class accept_encoding {
  public:
    // Reads one Accept-Encoding field value (a request may carry several field lines).
    void read(std::string_view field_value) noexcept;

    // The best coding among those offered: identity always, gzip and brotli when the page has
    // those forms.
    pages::content_coding best(bool has_gzip, bool has_br) const noexcept;

  private:
    // Weights in thousandths (qvalue has three decimals); -1: no entry.
    struct weights {
        int gzip = -1;
        int br = -1;
        int identity = -1;
        int any = -1;  // `*`
    };
    void read_entry(std::string_view entry) noexcept;

    weights w_;
};

}  // namespace waitroom::gateway
