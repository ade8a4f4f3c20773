#pragma once
// The access log the gateway writes one line per request to: JSON lines handed to an spdlog
// async logger, so formatting is the only cost on the request path and the file I/O happens on
// the logger's own thread. Header-only so that gateway/ can call it without linking server/,
// which creates the logger (see waitroom/server/logging.hpp).

#include <spdlog/logger.h>

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
    std::int64_t unix_ms = 0;               // when the request finished (product clock)
};

class access_log {
  public:
    explicit access_log(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

    // Formats one JSON line and queues it; never blocks on I/O (the logger drops the oldest
    // line when its queue is full rather than stall a worker).
    void write(const access_record& r) const {
        std::string line;
        line.reserve(160 + r.target.size());
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
        line += '}';
        logger_->info(line);
    }

    spdlog::logger& logger() const { return *logger_; }

  private:
    // `value` as a JSON string: quotes, backslashes and control characters escaped, and bytes
    // that are not well-formed UTF-8 (RFC 3629: no overlongs, surrogates or code points past
    // U+10FFFF) written as U+FFFD each, so that a hostile Host or target never makes the line
    // invalid JSON. Hand-written rather than through a JSON library: it runs for every request
    // on the worker's thread, and allocates nothing beyond the line.
    static void append_field(std::string& out, std::string_view key, std::string_view value) {
        out += ",\"";
        out += key;
        out += "\":\"";
        static constexpr char hex[] = "0123456789abcdef";
        static constexpr std::string_view replacement = "\xEF\xBF\xBD";
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
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 0xf];
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
            } else {
                out.append(value.substr(i, len));
                i += len;
            }
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
