// A TLS listener's current certificate set, its reload, and the checks `waitroomd check` makes
// of certificate files.
#include "waitroom/gateway/listener_tls.hpp"

#include <ctime>
#include <stdexcept>

#include "certificate_set.hpp"

namespace waitroom::gateway {

namespace {

std::string utc_text(std::int64_t unix_time) {
    const auto t = static_cast<std::time_t>(unix_time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

config::problem problem_at(const config::config& cfg, const config::setting_place& at,
                           std::string message) {
    return {cfg.source_path, at.line, at.column, at.path, std::move(message)};
}

// An expired certificate is an error; one that expires within expiry_warning, a warning.
std::optional<certificate_finding> expiry_finding(const config::config& cfg,
                                                  const config::tls_certificate& c,
                                                  const certificate_info& info,
                                                  std::chrono::system_clock::time_point now) {
    const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch());
    const auto left = std::chrono::seconds(info.not_after) - now_s;
    const std::string what = c.cert + ": certificate for " + info.name;
    if (left <= std::chrono::seconds::zero()) {
        return certificate_finding{
            problem_at(cfg, c.cert_at, what + " expired on " + utc_text(info.not_after)), true};
    }
    if (left < expiry_warning) {
        const auto days = std::chrono::duration_cast<std::chrono::hours>(left).count() / 24;
        return certificate_finding{
            problem_at(cfg, c.cert_at,
                       "warning: " + what + " expires on " + utc_text(info.not_after) + " (in " +
                           std::to_string(days) + " day(s)); renew it"),
            false};
    }
    return std::nullopt;
}

}  // namespace

std::vector<std::string> listener_alpn(const config::listener& cfg) {
    if (cfg.http2) {
        return {"h2", "http/1.1"};  // the server's preference: h2 for a client that offers it
    }
    return {"http/1.1"};
}

listener_tls::listener_tls(const config::listener& cfg) {
    if (!cfg.tls) {
        throw std::invalid_argument("listener_tls: the listener has no tls");
    }
    auto built = certificate_set::build(*cfg.tls, listener_alpn(cfg));
    if (!built.set) {
        throw std::runtime_error(built.error->to_string());
    }
    current_.store(std::move(built.set), std::memory_order_release);
}

std::optional<std::string> listener_tls::reload(const config::listener& cfg) {
    if (!cfg.tls) {
        return "the listener has no tls";
    }
    auto built = certificate_set::build(*cfg.tls, listener_alpn(cfg));
    if (!built.set) {
        return built.error->to_string();
    }
    current_.store(std::move(built.set), std::memory_order_release);
    return std::nullopt;
}

std::vector<certificate_info> listener_tls::certificates() const {
    return current()->certificates();
}

std::vector<certificate_finding> check_certificates(const config::config& cfg,
                                                    std::chrono::system_clock::time_point now) {
    std::vector<certificate_finding> out;
    for (const auto& l : cfg.listen) {
        if (!l.tls) {
            continue;
        }
        for (const auto& c : l.tls->certificates) {
            auto loaded = load_certificate(c, *l.tls);
            if (loaded.error) {
                const auto& e = *loaded.error;
                out.push_back({problem_at(cfg, e.at, e.file + ": " + e.reason), true});
            } else if (auto f = expiry_finding(cfg, c, loaded.info, now)) {
                out.push_back(std::move(*f));
            }
        }
    }
    return out;
}

}  // namespace waitroom::gateway
