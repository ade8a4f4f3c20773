#include "redis_sentinel.hpp"

#include <boost/asio/post.hpp>


#include "redis_client.hpp"

namespace waitroom::state::redis {

namespace asio = boost::asio;

sentinel_locator::sentinel_locator(asio::any_io_executor strand,
                                   std::vector<redis_endpoint> sentinels,
                                   std::string master_name, std::chrono::milliseconds timeout)
    : strand_(std::move(strand)),
      sentinels_(std::move(sentinels)),
      master_name_(std::move(master_name)),
      timeout_(timeout) {}

sentinel_locator::~sentinel_locator() {
    if (probe_) {
        probe_->stop();
    }
}

void sentinel_locator::locate(handler done) {
    done_ = std::move(done);
    ask(0);
}

void sentinel_locator::stop() {
    done_ = nullptr;
    if (auto p = std::move(probe_)) {
        p->stop();
    }
}

void sentinel_locator::distrust_last() {
    first_ = (first_ + 1) % sentinels_.size();
}

void sentinel_locator::ask(std::size_t tried) {
    if (tried >= sentinels_.size()) {
        finish(std::nullopt);
        return;
    }
    const std::size_t i = (first_ + tried) % sentinels_.size();
    redis_options o;
    o.host = sentinels_[i].host;
    o.port = sentinels_[i].port;
    o.timeout = timeout_;
    probe_ = std::make_shared<client>(strand_, std::move(o), client::kind::sentinel);
    probe_->execute(
        {{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name_}},
        client::clock::now() + timeout_,
        [w = weak_from_this(), tried, i](std::error_code ec, std::vector<value> replies) {
            auto self = w.lock();
            if (!self || !self->done_) {
                return;
            }
            if (auto p = std::move(self->probe_)) {
                p->stop();
            }
            std::optional<redis_endpoint> master;
            if (!ec && replies.size() == 1) {
                master = parse_master_address(replies[0]);
            }
            if (!master) {
                self->ask(tried + 1);
                return;
            }
            self->first_ = i;
            self->finish(std::move(master));
        });
}

void sentinel_locator::finish(std::optional<redis_endpoint> master) {
    if (!done_) {
        return;
    }
    asio::post(strand_, [d = std::move(done_), m = std::move(master)] { d(m); });
    done_ = nullptr;
}

}  // namespace waitroom::state::redis
