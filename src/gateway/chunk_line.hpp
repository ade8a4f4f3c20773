#pragma once
// The chunk-size line of a chunked body (RFC 9112 §7.1.1), checked byte by byte as it arrives:
//     chunk-line = 1*HEXDIG *( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] ) CRLF
//     quoted-string = DQUOTE *( qdtext / "\" ( HTAB / SP / VCHAR / obs-text ) ) DQUOTE
//     qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
// (BWS where Beast's parser allows it.) Beast's parser reads a chunk line only once its CRLF is
// there and lets any byte through a quoted string, so a line that can never be valid (a control
// byte, a quoted string that a CR cuts) would be waited for until a timeout. Checked here, such
// a line is refused as soon as its first impossible byte arrives, and a whole line is held to
// the same grammar, so a line is judged alike whether it comes in one read or in many.
// Sans-io: pure functions over bytes.

#include <cstddef>
#include <string_view>

namespace waitroom::gateway {

// What check_chunk_line found.
struct chunk_line_scan {
    enum class verdict {
        partial,    // every byte so far can begin a valid line; its CRLF has not come
        complete,   // a valid line ends after `length` bytes (its CRLF included)
        malformed,  // no valid line begins with these bytes
    };
    verdict what = verdict::partial;
    std::size_t length = 0;  // complete: the line's length with its CRLF
};

// Reads `bytes`, the start of a chunk line, up to the end of the line or of the bytes.
chunk_line_scan check_chunk_line(std::string_view bytes);

// True when `extensions` (what follows a chunk-size in a whole line, before its CRLF) are
// valid chunk extensions (empty included).
bool valid_chunk_extensions(std::string_view extensions);

}  // namespace waitroom::gateway
