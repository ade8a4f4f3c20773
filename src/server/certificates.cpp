// The TLS listeners' certificates for the process: loaded once at start for every worker,
// re-read on every reload (certbot renews files in place, so the same paths may hold new
// certificates), and their expiry exposed as a metric.
#include "server_impl.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>

namespace waitroom::server {

namespace {

std::string address_label(const asio::ip::tcp::endpoint& ep) {
    const std::string host = ep.address().to_string();
    return (ep.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(ep.port());
}

}  // namespace

check_result check_config(const std::string& path) {
    check_result out;
    out.loaded = load_config(path);
    if (!out.loaded.ok()) {
        return out;
    }
    for (auto& f : gateway::check_certificates(*out.loaded.cfg, std::chrono::system_clock::now())) {
        (f.error ? out.loaded.problems : out.warnings).push_back(std::move(f.problem));
    }
    if (!out.loaded.problems.empty()) {
        out.loaded.cfg = nullptr;
    }
    return out;
}

void server::impl::load_certificates(const config::config& cfg,
                                     const std::vector<asio::ip::tcp::endpoint>& endpoints) {
    tls_.clear();
    tls_labels_.clear();
    for (std::size_t i = 0; i < cfg.listen.size(); ++i) {
        const auto& l = cfg.listen[i];
        tls_.push_back(l.tls ? std::make_shared<gateway::listener_tls>(l) : nullptr);
        tls_labels_.push_back(i < endpoints.size() ? address_label(endpoints[i]) : l.host);
        if (tls_.back()) {
            publish_certificates(i);
        }
    }
}

void server::impl::reload_certificates(const config::config& cfg) {
    for (std::size_t i = 0; i < tls_.size(); ++i) {
        if (!tls_[i]) {
            continue;
        }
        // A listener that the file no longer gives TLS at this place keeps serving until a
        // restart (see same_listeners): its certificates stay as they are.
        if (i >= cfg.listen.size() || !cfg.listen[i].tls) {
            spdlog::warn("reload: listener {} keeps its certificates until a restart",
                         tls_labels_[i]);
            continue;
        }
        if (auto error = tls_[i]->reload(cfg.listen[i])) {
            spdlog::error("reload: listener {}: {}; keeping its previous certificates",
                          tls_labels_[i], *error);
            if (metrics_) {
                metrics_->tls_reload_failures().inc(static_cast<unsigned>(iocs_.size()));
            }
            continue;
        }
        publish_certificates(i);
    }
}

void server::impl::publish_certificates(std::size_t i) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const auto warn_before = std::chrono::seconds(gateway::expiry_warning).count();
    for (const auto& c : tls_[i]->certificates()) {
        spdlog::info("listener {}: certificate {} from {}", tls_labels_[i], c.name, c.cert_file);
        if (c.not_after <= now) {
            spdlog::error("listener {}: certificate {} ({}) has expired", tls_labels_[i], c.name,
                          c.cert_file);
        } else if (c.not_after - now < warn_before) {
            spdlog::warn("listener {}: certificate {} ({}) expires in {} day(s)", tls_labels_[i],
                         c.name, c.cert_file, (c.not_after - now) / 86400);
        }
        if (metrics_) {
            metrics_->tls_certificate_expiry(tls_labels_[i], c.name)
                .set(static_cast<unsigned>(iocs_.size()), c.not_after);
        }
    }
}

}  // namespace waitroom::server
