#pragma once
// The steps every request takes between its head and the room's decision, whatever protocol
// carried it: the framing checks, the one reading of its target and Host that the room routes on
// and the origin is sent, and the access log and metrics once it is answered. An HTTP/1.1
// connection and an HTTP/2 stream call the same functions, so no request path is written twice.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "waitroom/gateway/message_head.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "waitroom/util/request_target.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

// Why a request is refused before any room sees it: its status (0: it goes on) and the text of
// the gateway's answer.
struct intake_refusal {
    unsigned status = 0;
    std::string_view text;
};

// Checks the head's framing and reads its target and Host into `canonical` (its views point
// into `head` or `buffers`). `host_required`: HTTP/1.1 and HTTP/2 need a Host.
intake_refusal take_in(const request_head& head, bool host_required,
                       util::canonical_request& canonical, util::target_buffers& buffers,
                       std::string_view client_ip);

// The gateway's own error answer: its plain-text body and the fields before `extra`'s
// ("Retry-After" when `retry_after` is set, "Allow" for a 405).
std::string error_body(unsigned status, std::string_view text);
void add_error_fields(header_list& fields, unsigned status, std::string_view retry_after);

// What the connection (HTTP/1.1) or the stream (HTTP/2) that serves a request counts of its
// answer, for the access log and the metrics.
struct answer_tally {
    unsigned status = 0;
    std::uint64_t bytes_sent = 0;                   // body bytes
    std::chrono::steady_clock::time_point started;  // the head arrived
};

// Counts an answered request in the metrics and writes its access-log line. `head`: null when
// the request never had one; `filter`: the room's decision (empty when none was taken).
void record_answer(worker_context& worker, const request_head* head,
                   metrics::http_protocol protocol, std::string_view client_ip,
                   const answer_tally& answer, const filter_result& filter);

// The protocol of an HTTP/1 version (11, 10).
inline metrics::http_protocol http1_protocol(unsigned version) {
    return version >= 11 ? metrics::http_protocol::http11 : metrics::http_protocol::http10;
}

}  // namespace waitroom::gateway
