#pragma once
// The compressed forms of a page answered from memory: a rendered queue page, reject page or JSON
// answer is kept beside its gzip (zlib) and brotli forms, compressed once when it is rendered
// (the render cache holds all three), so that no request ever pays for compression.
//
// Levels: zlib's default 6 and brotli quality 5. A page is compressed on the worker's thread when
// the cache misses, so the cost counts: on the 24 KB built-in queue page, render 0.22 ms; gzip 6
// 0.54 ms (9 doubles that for 8 bytes less); brotli 5 0.43 ms, 9 12 ms (50 bytes less), 11 29 ms
// (10 % less). Method and figures: bench/README.md, "Page compression".

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace waitroom::pages {

// The content codings a page is kept in (RFC 9110 §8.4.1).
enum class content_coding : std::uint8_t { identity, gzip, br };

inline constexpr int gzip_level = 6;
inline constexpr int brotli_quality = 5;

// `text` as a gzip member (RFC 1952) at `level` (1–9); "" if zlib fails.
std::string gzip_compress(std::string_view text, int level = gzip_level);
// `text` as a brotli stream (RFC 7932) at `quality` (0–11); "" if the encoder fails.
std::string brotli_compress(std::string_view text, int quality = brotli_quality);

// One rendered page in every form. A compressed form is "" when it would not be smaller than the
// page itself (a tiny body) or its compressor failed: that coding is then not offered.
struct rendered_page {
    std::string identity;
    std::string gzip;
    std::string br;

    // `text` with both compressed forms made now.
    static std::shared_ptr<const rendered_page> compress(std::string text);
    // Whether `coding`'s form exists (identity always does).
    bool has(content_coding coding) const;
};

// A rendered page, shared with the cache so a response can hold it without a copy.
using page_body = std::shared_ptr<const rendered_page>;

// The bytes of `page` in `coding` (identity when that form does not exist), sharing the page's
// ownership: no copy, no allocation.
std::shared_ptr<const std::string> form_of(const page_body& page, content_coding coding);

}  // namespace waitroom::pages
