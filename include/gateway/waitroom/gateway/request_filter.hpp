#pragma once
// The hook where the waiting-room decision plugs into the data plane: called once per request
// after its header is read and validated, before anything reaches the origin. The default lets
// everything pass untouched.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "waitroom/gateway/message_head.hpp"
#include "waitroom/util/request_target.hpp"

namespace waitroom::gateway {

struct node_runtime;

using header_list = std::vector<std::pair<std::string, std::string>>;

// What the session knows about the request besides its header.
struct request_info {
    // The visitor's address, as text: the peer's (the socket's, or a PROXY header's), or behind
    // a trusted proxy the X-Forwarded-For address it vouches for.
    std::string client_ip;
    // The same, parsed once per connection for IP bypass rules (IPv4 as v4-mapped IPv6).
    std::optional<std::array<std::uint8_t, 16>> client_ip_bytes;
    // The visitor used https: a TLS listener, or a trusted proxy's X-Forwarded-Proto says so.
    bool tls = false;
    unsigned worker = 0;  // index of the worker the connection lives on
    // Scratch the filter keeps between the requests of one connection (e.g. the admission
    // cookie it last opened, so a keep-alive client's unchanged cookie is not decrypted again).
    // The filter alone reads and writes it; the session only keeps it for the connection's life.
    mutable std::shared_ptr<void> filter_state;
    // The request in flight's canonical target and Host, read once by the session (the origin
    // is sent the same). Null when a filter is called without a session: it then reads them.
    const util::canonical_request* request = nullptr;
    // The runtime (config, rooms) the session serves this request under: the filter decides
    // under the same one. Null when a filter is called without a session: it takes the current.
    std::shared_ptr<const node_runtime> runtime;
};

// The filter's answer.
struct filter_result {
    enum class action {
        pass,     // forward to the origin; `headers` are added to the origin's response
        respond,  // answer from memory with status/headers/body; the origin is never touched
    };
    action what = action::pass;
    unsigned status = 200;  // respond only
    header_list headers;    // pass: added to the origin response (Set-Cookie…); respond: sent
    // respond only: fields already written as "Name: value\r\n" lines, sent before `headers`
    // (a queue page's answer writes its few fields at once: no list of strings to build).
    std::string fields;
    std::string body;  // respond only (when `shared_body` is null)
    // respond only: a body shared with a cache (a rendered queue page in one of its forms), sent
    // without a copy; wins over `body` when set. Immutable while any response holds it.
    std::shared_ptr<const std::string> shared_body;
    // pass only: request fields the origin must not see (a room's bypass secrets), matched
    // without regard to case; null (the usual case) drops none. Shares the owner of the
    // filter's config, so it stays valid while the session keeps this result.
    std::shared_ptr<const std::vector<std::string>> drop_fields;
    // Handed back to on_response for this request (e.g. the room and visitor of the decision).
    std::shared_ptr<void> context;
    // For the access log: the room id ("" = none) and the decision (a string literal: admit,
    // queue, reject, pass, bypass, misdirected; "" = no filter ran).
    std::string room;
    std::string_view decision;

    static filter_result pass() { return {}; }
    static filter_result respond(unsigned status, header_list headers, std::string body) {
        filter_result r;
        r.what = action::respond;
        r.status = status;
        r.headers = std::move(headers);
        r.body = std::move(body);
        return r;
    }
    static filter_result respond(unsigned status, header_list headers,
                                 std::shared_ptr<const std::string> body) {
        filter_result r;
        r.what = action::respond;
        r.status = status;
        r.headers = std::move(headers);
        r.shared_body = std::move(body);
        return r;
    }
};

// What a filter calls with its answer: a copyable callable like std::function<void(filter_result)>,
// except that a callable of up to inline_size bytes (the session's: one shared_ptr) is kept in
// place. libstdc++'s std::function keeps only trivially copyable callables in place, so it would
// allocate once per request; a larger callable is kept on the heap here too.
class filter_completion {
  public:
    static constexpr std::size_t inline_size = 32;
    // Whether a callable of type F is kept in place (no allocation).
    template <class F, class D = std::decay_t<F>>
    static constexpr bool kept_in_place =
        sizeof(D) <= inline_size &&
        alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

    filter_completion() noexcept = default;
    template <class F, class D = std::decay_t<F>,
              class = std::enable_if_t<!std::is_same_v<D, filter_completion> &&
                                       std::is_invocable_v<D&, filter_result>>>
    filter_completion(F&& f) {  // NOLINT(google-explicit-constructor): as std::function
        if constexpr (kept_in_place<D>) {
            ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
        } else {
            ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
        }
        ops_ = &ops_for<D>;
    }
    filter_completion(const filter_completion& o) {
        if (o.ops_ != nullptr) {
            o.ops_->copy(o.storage_, storage_);
            ops_ = o.ops_;
        }
    }
    filter_completion(filter_completion&& o) noexcept {
        if (o.ops_ != nullptr) {
            o.ops_->move(o.storage_, storage_);
            ops_ = std::exchange(o.ops_, nullptr);
        }
    }
    filter_completion& operator=(filter_completion o) noexcept {
        reset();
        if (o.ops_ != nullptr) {
            o.ops_->move(o.storage_, storage_);
            ops_ = std::exchange(o.ops_, nullptr);
        }
        return *this;
    }
    ~filter_completion() { reset(); }

    // Calls the callable (as std::function, a const call may change it). Must hold one.
    void operator()(filter_result r) const { ops_->call(storage_, std::move(r)); }
    explicit operator bool() const noexcept { return ops_ != nullptr; }

  private:
    struct ops_table {
        void (*call)(unsigned char* self, filter_result&& r);
        void (*copy)(const unsigned char* from, unsigned char* to);
        void (*move)(unsigned char* from, unsigned char* to) noexcept;  // and destroys `from`
        void (*destroy)(unsigned char* self) noexcept;
    };

    // The callable in `storage`: in place, or (too big) a pointer to it.
    template <class D>
    static D& target(unsigned char* storage) noexcept {
        if constexpr (kept_in_place<D>) {
            return *std::launder(reinterpret_cast<D*>(storage));
        } else {
            return **std::launder(reinterpret_cast<D**>(storage));
        }
    }

    template <class D>
    static constexpr ops_table ops_for = {
        [](unsigned char* self, filter_result&& r) { target<D>(self)(std::move(r)); },
        [](const unsigned char* from, unsigned char* to) {
            const D& f = target<D>(const_cast<unsigned char*>(from));
            if constexpr (kept_in_place<D>) {
                ::new (static_cast<void*>(to)) D(f);
            } else {
                ::new (static_cast<void*>(to)) D*(new D(f));
            }
        },
        [](unsigned char* from, unsigned char* to) noexcept {
            if constexpr (kept_in_place<D>) {
                D& f = target<D>(from);
                ::new (static_cast<void*>(to)) D(std::move(f));
                f.~D();
            } else {
                ::new (static_cast<void*>(to)) D*(&target<D>(from));
            }
        },
        [](unsigned char* self) noexcept {
            if constexpr (kept_in_place<D>) {
                target<D>(self).~D();
            } else {
                delete &target<D>(self);
            }
        },
    };

    void reset() noexcept {
        if (ops_ != nullptr) {
            std::exchange(ops_, nullptr)->destroy(storage_);
        }
    }

    alignas(std::max_align_t) mutable unsigned char storage_[inline_size];
    const ops_table* ops_ = nullptr;
};

// Called on the worker's thread. Implementations must not block and must not throw.
class request_filter {
  public:
    using completion = filter_completion;

    virtual ~request_filter() = default;

    // Decides on a request. `done` must be called exactly once, on the worker's thread (it may
    // be called before on_request returns, or later after an asynchronous step such as a store
    // call — then post it to the connection's executor).
    virtual void on_request(const request_head& req, const request_info& info, completion done) {
        (void)req;
        (void)info;
        done(filter_result::pass());
    }

    // Sees (and may change) the origin's response header before it goes to the client, e.g. to
    // act on and remove `Cf-Waiting-Room-Command`. `context` is the one on_request returned.
    virtual void on_response(response_head& res, const std::shared_ptr<void>& context) {
        (void)res;
        (void)context;
    }

    // The origin gave no answer and the gateway sends its own 502, 503 or 504 instead: adds to its
    // `headers` what on_response would have added for this request (e.g. the cookie of a
    // visitor counted as admitted by it). `context` is the one on_request returned.
    virtual void on_origin_error(header_list& headers, const std::shared_ptr<void>& context) {
        (void)headers;
        (void)context;
    }
};

}  // namespace waitroom::gateway
