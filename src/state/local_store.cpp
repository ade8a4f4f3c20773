#include "waitroom/state/local_store.hpp"

namespace waitroom::state {

void local_store::sync(node_report report, sync_handler done) {
    sync_result res;
    {
        std::lock_guard lock(mu_);
        res.rooms.reserve(report.rooms.size());
        for (auto& r : report.rooms) {
            room_ledger& ledger = rooms_[r.room];
            room_grant g = ledger.sync(report.node_id, report.datacenter, r, report.now_ms,
                                       report.node_ttl_ms, batch_of(report, r));
            if (g.stale) {
                // The same step as the Redis store's: the deltas of another epoch were refused,
                // the node's live windows go instead.
                r.full = true;
                g = ledger.sync(report.node_id, report.datacenter, r, report.now_ms,
                                report.node_ttl_ms, batch_of(report, r));
            }
            res.rooms.push_back(std::move(g));
        }
    }
    done(std::move(res));
}

void local_store::top_up(top_up_request req, top_up_handler done) {
    top_up_result res;
    {
        std::lock_guard lock(mu_);
        res.granted = rooms_[req.room].top_up(req.node_id, req.datacenter, req.limits, req.want,
                                              req.now_ms, req.epoch, req.id, req.need,
                                              req.unreported);
    }
    done(res);
}

void local_store::write_overrides(override_write w, override_handler done) {
    override_result res;
    {
        std::lock_guard lock(mu_);
        res.overrides = rooms_[w.room].write_overrides(w);
    }
    done(std::move(res));
}

std::int64_t local_store::held_total(const std::string& room) const {
    std::lock_guard lock(mu_);
    auto it = rooms_.find(room);
    return it == rooms_.end() ? 0 : it->second.held_total();
}

room::room_counts local_store::counts(const std::string& room, const room::room_limits& limits,
                                      std::int64_t now_ms) const {
    std::lock_guard lock(mu_);
    auto it = rooms_.find(room);
    if (it == rooms_.end()) {
        room::room_counts c;
        c.as_of_ms = now_ms;
        return c;
    }
    return it->second.counts(limits, now_ms);
}

}  // namespace waitroom::state
