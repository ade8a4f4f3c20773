#include "request_intake.hpp"

#include <spdlog/spdlog.h>

#include "forward_headers.hpp"

namespace waitroom::gateway {

namespace {

const char* reason_text(unsigned status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 413:
            return "Content Too Large";
        case 431:
            return "Request Header Fields Too Large";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        default:
            return "Error";
    }
}

}  // namespace

std::string error_body(unsigned status, std::string_view text) {
    return std::to_string(status) + " " + reason_text(status) + "\n" + std::string(text) + "\n";
}

void add_error_fields(header_list& fields, unsigned status, std::string_view retry_after) {
    fields.insert(fields.begin(),
                  {{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}});
    if (!retry_after.empty()) {
        fields.emplace_back("Retry-After", std::string(retry_after));
    }
    if (status == 405) {
        // Only CONNECT is refused so (RFC 9110 §15.5.6 wants the methods that are allowed).
        fields.emplace_back("Allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE");
    }
}

intake_refusal take_in(const request_head& head, bool host_required,
                       util::canonical_request& canonical, util::target_buffers& buffers,
                       std::string_view client_ip) {
    if (auto problem = request_problem(head); !problem.empty()) {
        spdlog::debug("gateway: 400 from {}: {}", client_ip, problem);
        return {400, "ambiguous or malformed request framing"};
    }
    // The target and Host are read here, once: the room routes on this reading and the origin
    // is sent it.
    auto host = head.find(http::field::host);
    std::string_view host_value;
    if (host != head.end()) {
        host_value = host->value();
    }
    canonical = util::canonicalize_request(head.method_string(), head.target(),
                                           host != head.end() ? &host_value : nullptr,
                                           host_required, buffers);
    if (canonical.status != util::target_status::ok) {
        spdlog::debug("gateway: refused request from {}: {}", client_ip, canonical.problem);
        return {canonical.status == util::target_status::method_not_allowed ? 405u : 400u,
                canonical.problem};
    }
    return {};
}

void record_answer(worker_context& worker, const request_head* head,
                   metrics::http_protocol protocol, std::string_view client_ip,
                   const answer_tally& answer, const filter_result& filter) {
    const auto now = std::chrono::steady_clock::now();
    if (auto* m = worker.ctx->metrics()) {
        m->requests(metrics::status_class_of(answer.status)).inc(worker.index);
        m->requests_by_protocol(protocol).inc(worker.index);
        m->request_latency().observe(worker.index,
                                     std::chrono::duration<double>(now - answer.started).count());
    }
    const auto* log = worker.ctx->access_log();
    if (log == nullptr || head == nullptr) {
        return;
    }
    util::access_record r;
    r.remote = client_ip;
    r.method = head->method_string();
    r.target = head->target();
    r.host = (*head)[http::field::host];
    r.status = answer.status;
    r.bytes_sent = answer.bytes_sent;
    r.duration = std::chrono::duration_cast<std::chrono::microseconds>(now - answer.started);
    r.unix_ms = util::unix_ms(worker.ctx->clock().now());
    r.room = filter.room;
    r.decision = filter.decision;
    static constexpr std::string_view names[] = {"HTTP/1.0", "HTTP/1.1", "HTTP/2"};
    r.protocol = names[static_cast<std::size_t>(protocol)];
    log->write(r);
}

}  // namespace waitroom::gateway
