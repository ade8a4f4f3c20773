#pragma once
// Finds the master of a name that Redis Sentinels monitor (`state.sentinels`, `master_name`):
// asks the sentinels one at a time, starting with the one that answered last, with
// SENTINEL GET-MASTER-ADDR-BY-NAME. The Redis client asks again after every lost connection, so
// a failover is followed as soon as a sentinel names the new master.

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis_protocol.hpp"
#include "waitroom/state/redis_store.hpp"

namespace waitroom::state::redis {

class client;

class sentinel_locator : public std::enable_shared_from_this<sentinel_locator> {
  public:
    using handler = std::function<void(std::optional<redis_endpoint>)>;

    sentinel_locator(boost::asio::any_io_executor strand, std::vector<redis_endpoint> sentinels,
                     std::string master_name, std::chrono::milliseconds timeout);
    ~sentinel_locator();
    sentinel_locator(const sentinel_locator&) = delete;
    sentinel_locator& operator=(const sentinel_locator&) = delete;

    // On the strand: `done` gets the master's address, or nullopt when no sentinel named one
    // within its timeout. Posted, never inline. One question at a time.
    void locate(handler done);
    void stop();  // on the strand: drops the question in flight; `done` is not called
    // The master last named could not be used (no connection, or not a master): the next
    // question starts with the next sentinel, so one stale sentinel cannot hold the store.
    void distrust_last();

  private:
    void ask(std::size_t tried);
    void finish(std::optional<redis_endpoint> master);

    boost::asio::any_io_executor strand_;
    std::vector<redis_endpoint> sentinels_;
    std::string master_name_;
    std::chrono::milliseconds timeout_;
    std::size_t first_ = 0;  // the sentinel that answered last
    std::shared_ptr<client> probe_;
    handler done_;
};

}  // namespace waitroom::state::redis
