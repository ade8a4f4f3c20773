#pragma once
// The access log the gateway writes one line per request to: JSON lines handed to an spdlog
// async logger, so formatting is the only cost on the request path and the file I/O happens on
// the logger's own thread. Header-only so that gateway/ can call it without linking server/,
// which creates the logger (see waitroom/server/logging.hpp).

#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace waitroom::util {

// What one finished request contributes to the access log.
struct access_record {
    std::string_view remote;                // client address
    std::string_view method;                // request method
    std::string_view target;                // request target as received
    std::string_view host;                  // Host header
    unsigned status = 0;                    // response status sent
    std::uint64_t bytes_sent = 0;           // response body bytes sent to the client
    std::chrono::microseconds duration{0};  // first request byte to last response byte
    std::string_view room;                  // room id, "" when no room matched
    std::string_view decision;              // admit | queue | reject | pass | bypass | ""
    std::string_view protocol;              // HTTP/1.0 | HTTP/1.1 | HTTP/2
    std::int64_t unix_ms = 0;               // when the request finished (product clock)
};

class access_log {
  public:
    // At most this many bytes of one field are logged (then "…"): a 16 KiB target of bytes that
    // each take 3 to 6 in the line must not make the logger's queue, bounded in lines, hold
    // gigabytes while its file is slow.
    static constexpr std::size_t max_field_bytes = 2048;

    explicit access_log(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

    // Formats one JSON line and queues it; never blocks on I/O (the logger drops the oldest
    // line when its queue is full rather than stall a worker).
    void write(const access_record& r) const {
        std::string line;
        // The fields a client sends are logged up to max_field_bytes each: reserve for that,
        // not for a 16 KiB target that is cut anyway.
        line.reserve(160 + std::min(r.target.size(), max_field_bytes) +
                     std::min(r.host.size(), max_field_bytes));
        line += "{\"ts\":";
        line += std::to_string(r.unix_ms);
        append_field(line, "remote", r.remote);
        append_field(line, "method", r.method);
        append_field(line, "target", r.target);
        append_field(line, "host", r.host);
        line += ",\"status\":";
        line += std::to_string(r.status);
        line += ",\"bytes\":";
        line += std::to_string(r.bytes_sent);
        line += ",\"us\":";
        line += std::to_string(r.duration.count());
        append_field(line, "room", r.room);
        append_field(line, "decision", r.decision);
        append_field(line, "protocol", r.protocol);
        line += '}';
        logger_->info(line);
    }

    spdlog::logger& logger() const { return *logger_; }

  private:
    // `value` as a JSON string: quotes, backslashes and control characters escaped (C1 controls
    // and the line separators U+2028, U+2029 too, so that no tool splits or runs a line), and
    // bytes that are not well-formed UTF-8 (RFC 3629: no overlongs, surrogates or code points
    // past U+10FFFF) written as U+FFFD each, so that a hostile Host or target never makes the
    // line invalid JSON. Hand-written rather than through a JSON library: it runs for every
    // request on the worker's thread, and allocates nothing beyond the line.
    static void append_field(std::string& out, std::string_view key, std::string_view value) {
        out += ",\"";
        out += key;
        out += "\":\"";
        static constexpr char hex[] = "0123456789abcdef";
        static constexpr std::string_view replacement = "\xEF\xBF\xBD";
        const auto escape = [&out](unsigned code) {
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) {
                out += hex[(code >> shift) & 0xf];
            }
        };
        const bool cut = value.size() > max_field_bytes;
        if (cut) {
            value = value.substr(0, max_field_bytes);  // a sequence cut here becomes U+FFFD
        }
        const auto* p = reinterpret_cast<const unsigned char*>(value.data());
        const std::size_t n = value.size();
        std::size_t i = 0;
        while (i < n) {
            const unsigned char c = p[i];
            if (c < 0x80) {
                if (c == '"' || c == '\\') {
                    out += '\\';
                    out += static_cast<char>(c);
                } else if (c < 0x20 || c == 0x7f) {
                    escape(c);
                } else {
                    out += static_cast<char>(c);
                }
                ++i;
                continue;
            }
            const std::size_t len = utf8_sequence_length(p + i, n - i);
            if (len == 0) {
                out += replacement;
                ++i;
            } else if (len == 2 && c == 0xc2 && p[i + 1] <= 0x9f) {
                escape(p[i + 1]);  // U+0080..U+009F, the C1 controls
                i += 2;
            } else if (len == 3 && c == 0xe2 && p[i + 1] == 0x80 &&
                       (p[i + 2] == 0xa8 || p[i + 2] == 0xa9)) {
                escape(p[i + 2] == 0xa8 ? 0x2028 : 0x2029);
                i += 3;
            } else {
                out.append(value.substr(i, len));
                i += len;
            }
        }
        if (cut) {
            out += "\xE2\x80\xA6";  // …
        }
        out += '"';
    }

    // The length of the well-formed UTF-8 sequence at `s` (2 to 4), or 0 when there is none.
    static std::size_t utf8_sequence_length(const unsigned char* s, std::size_t avail) {
        const unsigned char c = s[0];
        std::size_t len = 0;
        unsigned char lo = 0x80;  // the second byte's range (RFC 3629, table in section 4)
        unsigned char hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            lo = c == 0xe0 ? 0xa0 : 0x80;
            hi = c == 0xed ? 0x9f : 0xbf;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            lo = c == 0xf0 ? 0x90 : 0x80;
            hi = c == 0xf4 ? 0x8f : 0xbf;
        } else {
            return 0;
        }
        if (avail < len || s[1] < lo || s[1] > hi) {
            return 0;
        }
        for (std::size_t k = 2; k < len; ++k) {
            if (s[k] < 0x80 || s[k] > 0xbf) {
                return 0;
            }
        }
        return len;
    }

    std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace waitroom::util
