#pragma once
// Redis Cluster for the Redis store (`state.cluster_nodes`): every key of a room carries the hash
// tag {room}, so a room lives in one hash slot and its script runs on that slot's master. The
// router reads the slot map (CLUSTER SLOTS) from a known node, sends each command of a pipeline
// to its slot's master (one pipeline per master, all in parallel) and hands back the replies in
// command order, as one connection would. It follows MOVED (and re-reads the map), ASK (the
// command again behind ASKING, the map kept), NOSCRIPT (again behind SCRIPT LOAD) and TRYAGAIN
// (again after a pause, within the call's deadline) by itself.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis_client.hpp"
#include "redis_protocol.hpp"
#include "waitroom/state/redis_store.hpp"

namespace waitroom::state::redis {

class cluster : public std::enable_shared_from_this<cluster> {
  public:
    using handler = client::handler;
    using clock = client::clock;

    cluster(boost::asio::any_io_executor strand, redis_options opt);
    ~cluster();
    cluster(const cluster&) = delete;
    cluster& operator=(const cluster&) = delete;

    // On the strand, as client::execute: replies in command order. An EVALSHA goes to the master
    // of its first key's slot; any other command with the next EVALSHA of the pipeline.
    void execute(std::vector<command> cmds, clock::time_point deadline, handler h);
    void start();  // on the strand: read the slot map now
    void stop();   // on the strand: drop every connection, fail everything, accept no more

  private:
    struct call;
    struct item {  // one command of a call on its way to a node
        std::size_t index = 0;
        std::optional<redis_endpoint> to;  // a redirection's node, else the slot's master
        bool asking = false;               // behind ASKING (an ASK redirection)
        bool load = false;                 // behind SCRIPT LOAD (after NOSCRIPT)
        bool pause = false;                // TRYAGAIN: send again after a pause
    };

    void dispatch(const std::shared_ptr<call>& c, std::vector<item> items);
    void on_part(const std::shared_ptr<call>& c, const std::vector<item>& items,
                 const redis_endpoint& node, std::error_code ec, std::vector<value>& replies);
    void finish(const std::shared_ptr<call>& c, std::error_code ec);
    std::optional<redis_endpoint> master_of(const std::vector<command>& all,
                                            std::size_t index) const;
    std::shared_ptr<client> node(const redis_endpoint& ep);
    void refresh();  // reads the slot map (once at a time); then runs what waited for it
    void ask_slots(std::vector<redis_endpoint> candidates, std::size_t next);
    void after_refresh(bool ok);
    // Takes a slot map read from a node; false (and the old map kept) when it names more than
    // max_masters masters.
    bool apply_map(const std::vector<slot_range>& ranges);

    boost::asio::any_io_executor strand_;
    redis_options opt_;
    bool stopped_ = false;
    std::map<std::string, std::shared_ptr<client>> nodes_;  // by "host:port"
    std::vector<redis_endpoint> masters_;
    std::vector<std::uint16_t> slot_master_;  // index into masters_; `none` when unknown
    static constexpr std::uint16_t none = 0xFFFF;
    static constexpr std::size_t max_masters = 1000;  // Redis Cluster's own advice is ≤ 1000
    bool refreshing_ = false;
    bool known_ = false;  // a slot map was read
    clock::time_point last_refresh_{};
    std::vector<std::function<void(bool)>> waiting_;  // calls waiting for the first map
};

}  // namespace waitroom::state::redis
