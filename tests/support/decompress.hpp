#pragma once
// Decoders for tests of compressed answers, with the libraries' own one-shot calls (zlib's
// inflate, BrotliDecoderDecompress), not the gateway's code: a failure comes back as a text that
// can never equal a page, so a test compares the result to the page it expects.

#include <brotli/decode.h>
#include <zlib.h>

#include <cstdint>
#include <string>

namespace waitroom::test {

// A whole gzip member, or "<gunzip failed>".
inline std::string gunzip(const std::string& in) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) {
        return "<gunzip failed>";
    }
    std::string out;
    char chunk[4096];
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    while (rc == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(chunk);
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(chunk, sizeof chunk - z.avail_out);
    }
    const bool whole = rc == Z_STREAM_END && z.avail_in == 0;
    inflateEnd(&z);
    return whole ? out : "<gunzip failed>";
}

// A whole brotli stream of at most `limit` bytes decoded, or "<unbrotli failed>".
inline std::string unbrotli(const std::string& in, std::size_t limit = 1 << 20) {
    std::string out(limit + 1, '\0');  // one more: a longer output shows
    std::size_t size = out.size();
    if (BrotliDecoderDecompress(in.size(), reinterpret_cast<const std::uint8_t*>(in.data()), &size,
                                reinterpret_cast<std::uint8_t*>(out.data())) !=
        BROTLI_DECODER_RESULT_SUCCESS) {
        return "<unbrotli failed>";
    }
    out.resize(size);
    return out;
}

}  // namespace waitroom::test
