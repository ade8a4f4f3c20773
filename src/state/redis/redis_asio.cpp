#include "redis_asio.hpp"

#include <hiredis/async.h>

#include <boost/asio/posix/stream_descriptor.hpp>

#include <memory>

namespace waitroom::state::redis {

namespace asio = boost::asio;

namespace {

// Lives while hiredis holds the context or a wait is outstanding (each wait holds a
// shared_ptr), so a completion that arrives after hiredis freed the context finds it dead.
struct adapter : std::enable_shared_from_this<adapter> {
    adapter(redisAsyncContext* c, asio::any_io_executor ex, std::function<void()> gone)
        : ac(c), sd(std::move(ex), c->c.fd), on_gone(std::move(gone)) {}

    redisAsyncContext* ac;
    asio::posix::stream_descriptor sd;
    std::function<void()> on_gone;
    bool alive = true;
    bool want_read = false;      // hiredis asked for read readiness (addRead/delRead)
    bool want_write = false;     // ... write readiness (addWrite/delWrite)
    bool read_waiting = false;   // an async_wait(read) is outstanding
    bool write_waiting = false;  // an async_wait(write) is outstanding

    // One wait per direction at a time; hooks are idempotent as hiredis requires.
    void arm_read() {
        if (!alive || !want_read || read_waiting) {
            return;
        }
        read_waiting = true;
        sd.async_wait(asio::posix::stream_descriptor::wait_read,
                      [self = shared_from_this()](const boost::system::error_code& ec) {
                          self->read_waiting = false;
                          if (ec || !self->alive || !self->want_read) {
                              return;
                          }
                          redisAsyncHandleRead(self->ac);  // may free the context (cleanup)
                          self->arm_read();
                      });
    }
    void arm_write() {
        if (!alive || !want_write || write_waiting) {
            return;
        }
        write_waiting = true;
        sd.async_wait(asio::posix::stream_descriptor::wait_write,
                      [self = shared_from_this()](const boost::system::error_code& ec) {
                          self->write_waiting = false;
                          if (ec || !self->alive || !self->want_write) {
                              return;
                          }
                          redisAsyncHandleWrite(self->ac);  // connects, flushes, may free
                          self->arm_write();
                      });
    }
};

// ev.data points at a heap holder of the shared_ptr; cleanup deletes it and clears ev.data,
// so hooks hiredis calls afterwards (or a second cleanup) see null and do nothing.
struct holder {
    std::shared_ptr<adapter> a;
};

adapter* get(void* p) {
    return p == nullptr ? nullptr : static_cast<holder*>(p)->a.get();
}

void add_read(void* p) {
    if (auto* a = get(p)) {
        a->want_read = true;
        a->arm_read();
    }
}
void del_read(void* p) {
    if (auto* a = get(p)) {
        a->want_read = false;
    }
}
void add_write(void* p) {
    if (auto* a = get(p)) {
        a->want_write = true;
        a->arm_write();
    }
}
void del_write(void* p) {
    if (auto* a = get(p)) {
        a->want_write = false;
    }
}
void cleanup(void* p) {
    if (p == nullptr) {
        return;
    }
    auto* h = static_cast<holder*>(p);
    std::shared_ptr<adapter> a = std::move(h->a);
    delete h;
    a->ac->ev.data = nullptr;
    a->alive = false;
    a->want_read = a->want_write = false;
    boost::system::error_code ignored;
    a->sd.cancel(ignored);
    a->sd.release();  // hiredis closes the descriptor itself
    if (auto gone = std::move(a->on_gone)) {
        gone();
    }
}

}  // namespace

void attach(redisAsyncContext* ac, asio::any_io_executor ex, std::function<void()> on_cleanup) {
    auto* h = new holder{std::make_shared<adapter>(ac, std::move(ex), std::move(on_cleanup))};
    ac->ev.data = h;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
}

}  // namespace waitroom::state::redis
