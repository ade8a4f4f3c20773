// Compressing a rendered page once, into the forms the render cache keeps beside it.
#include "waitroom/pages/page_encoding.hpp"

#include <brotli/encode.h>
#include <zlib.h>

#include <limits>

namespace waitroom::pages {

std::string gzip_compress(std::string_view text, int level) {
    if (text.size() > std::numeric_limits<uInt>::max()) {
        return {};
    }
    z_stream z{};
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
        return {};
    }
    std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return rc == Z_STREAM_END ? out : std::string{};
}

std::string brotli_compress(std::string_view text, int quality) {
    std::string out(BrotliEncoderMaxCompressedSize(text.size()), '\0');
    if (out.empty()) {
        return {};  // too large to bound
    }
    std::size_t size = out.size();
    if (BrotliEncoderCompress(quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, text.size(),
                              reinterpret_cast<const std::uint8_t*>(text.data()), &size,
                              reinterpret_cast<std::uint8_t*>(out.data())) != BROTLI_TRUE) {
        return {};
    }
    out.resize(size);
    return out;
}

std::shared_ptr<const rendered_page> rendered_page::compress(std::string text) {
    auto page = std::make_shared<rendered_page>();
    page->gzip = gzip_compress(text);
    page->br = brotli_compress(text);
    if (page->gzip.size() >= text.size()) {
        page->gzip.clear();
    }
    if (page->br.size() >= text.size()) {
        page->br.clear();
    }
    page->identity = std::move(text);
    return page;
}

bool rendered_page::has(content_coding coding) const {
    switch (coding) {
        case content_coding::gzip:
            return !gzip.empty();
        case content_coding::br:
            return !br.empty();
        default:
            return true;
    }
}

std::shared_ptr<const std::string> form_of(const page_body& page, content_coding coding) {
    if (!page->has(coding)) {
        coding = content_coding::identity;
    }
    const std::string& form = coding == content_coding::gzip ? page->gzip
                              : coding == content_coding::br ? page->br
                                                             : page->identity;
    return {page, &form};
}

}  // namespace waitroom::pages
