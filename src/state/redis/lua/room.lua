-- One room's shared counters, node heartbeats and slot leases in Redis: the arithmetic of
-- state::room_ledger (src/state/room_ledger.cpp), step for step, so that the local and the
-- Redis store give the same grants for the same reports. Keep the two in step.
--
-- KEYS (all carry the hash tag {room-id}, so a room lives on one Redis Cluster slot):
--   1 admitted  hash  rate sub-window start (ms)  -> new admissions
--   2 active    hash  window start (ms)           -> admitted visitors last seen in it
--   3 waiting   hash  "bucket:window" (ms)        -> queued visitors
--   4 nodes     hash  node id -> "last_seen held demand batch g<granted> t<top-up id>:<granted>
--                     datacenter": besides its lease, what the node's last sync and last top-up
--                     granted, taken back when the node says it never got the answer (a record
--                     without the g and t parts, as earlier versions wrote it, reads as 0)
--   5 meta      hash  node_ttl (the TTL of the last sync; top-ups expire nodes with it),
--                     epoch ("<now>/<node id>" of the first sync: a Redis that restarted empty
--                     has none, so its next sync makes another and nodes see it changed),
--                     epoch_at (its now), refill_until (set by the first stale report: until
--                     then, one node TTL after epoch_at, every live node re-reports and
--                     nothing is granted, since the counts still miss some nodes' visitors),
--                     seen:<node id> ("last_seen held peers free_active": what the node's last
--                     sync left, its lease updated by its top-ups; kept as long as the keys
--                     live without syncs), answers:<node id> ("ls peers free ..." of each of
--                     its syncs in the last two node TTLs: its answer may have been lost, so
--                     it is reserved the most of these), ghosts ("from to until": after a node reported
--                     leaving degraded mode, the nodes last seen in (from, to) are reserved
--                     their most unreported admissions until `until`, see ghost_reserve),
--                     leaving:<node id> ("rate active": the reserve of a node that reported
--                     leaving degraded mode and has not shown an answer since, see
--                     ghost_reserve), ghost_hold (the refill_until written for older scripts, which know no
--                     reserve, while one is held: they grant nothing meanwhile; this script
--                     ignores a refill_until equal to it)
--   6 overrides hash  queue_all, suspended -> "0" | "1" (run-time switches; absent = unset)
--   7 revoked   hash  ticket (decimal) -> "since:freed": the window of the store's first word of
--                     the revoked session (ms), and 1 once its place was freed, else 0
--   8 queued    hash  ticket (decimal) -> "bucket:window:rank": the queued tickets counted in
--                     `waiting`, each in its latest window (state/queued_tickets.hpp); rank: its
--                     leading zero bits, which place it in its bucket's sample
--   9 levels    hash  bucket -> sampling level: only tickets of rank >= level are kept, each
--                     counting as 2^level visitors (absent: 0, every ticket)
--  10 flagged   hash  ticket (decimal) -> since: tickets a flag refused (abuse_action), from
--                     the window of the store's first word of them (ms)
-- ARGV:
--   1 "sync" | "top_up" | "overrides"
--   overrides: 2 queue_all  3 suspended (each "keep" | "unset" | "0" | "1")  4 keep_ms
--   sync, top_up: 2 node id   3 datacenter   4 now (ms, the node's clock)
--   5 total_active_users  6 new_users_per_minute  7 session_ms  8 abandon_after_ms
--   9 window_ms  10 rate_window_ms  11 rate_span_ms  12 needs_slots (1 | 0)  13 rejoin_ms
--   sync:   14 node_ttl_ms  15 slots_used  16 slots_returned  17 demand
--           18 batch (node_report::batch, "0" = none)
--           19 epoch the node last had answered ("" = none)
--           20 held: "-1" = the windows below are deltas; a count = they are the node's live
--              totals (a re-report to a store whose epoch was not the node's) and it holds
--              that many leased slots (slots_used and slots_returned are then ignored)
--           21 n, then n pairs (sub-window, delta) for admitted
--           then m, then m pairs (window, delta) for active
--           then k, then k triples (bucket, window, delta) for waiting
--           then r, then r pairs (ticket, window) of revocations (window -1 = none live)
--           then c, then c quadruples (ticket, bucket, window, rank) of queued tickets checked
--              into a waiting window (the waiting triples come only with a re-report)
--           then q, then q tickets out of the queue (admitted, refused)
--           then f, then f tickets refused by a flag
--           next to last: the node's exact held slots after this report's returns, sent by
--              a node leaving degraded mode ("-1" = none: take slots_used and slots_returned
--              off the count instead; with a re-report, held is ARGV[20] either way)
--           last: the id of a top-up whose answer the node never got ("0" = none)
--   top_up: 14 want  15 epoch the node last had answered ("" = none)  16 id ("0" = none)
--           17 need: the visitors waiting for it ("0" or absent = not told)
--           18 unreported: the node's visitors who renewed out of windows no longer counted
--              at now, not reported yet: places held that the counts miss ("0" or absent)
-- Returns, sync:   {granted, release, active, admitted_last_minute, held,
--                   {bucket, queued, ...}, {datacenter, nodes, ...}, {queue_all, suspended},
--                   epoch, {revoked ticket, ...}, abandoned (the queued visitors the waiting
--                   windows this call pruned still held, each floored at zero),
--                   {sub-window, admissions, ...} (the live admitted windows above zero,
--                   ascending: when the minute's admissions leave it),
--                   {window, visitors, ...} (the live active windows above zero, ascending:
--                   when each place frees if its visitor does not come back),
--                   {flagged ticket, ...}}
--                  or "stale" when ARGV[19] is another epoch and ARGV[20] is "-1": nothing
--                  was applied (no node touched), the node sends its live totals instead
--          top_up: granted (0 while ARGV[15] is set and is not the room's epoch, and
--                  before refill_until)
--          overrides: {queue_all, suspended}
-- (a switch is -1 when unset, else 0 or 1)
--          sync, top_up: an error, before any write, when a key is not a hash (or absent)

local op = ARGV[1]

local function read_overrides()
    local v = redis.call('HMGET', KEYS[6], 'queue_all', 'suspended')
    local out = {}
    for k = 1, 2 do
        -- (anything but "0" or "1" written by hand reads as unset: a hole would cut the reply)
        if v[k] == '0' or v[k] == '1' then out[k] = tonumber(v[k]) else out[k] = -1 end
    end
    return out
end

if op == 'overrides' then
    local fields = {'queue_all', 'suspended'}
    for k = 1, 2 do
        local w = ARGV[1 + k]
        if w == 'unset' then
            redis.call('HDEL', KEYS[6], fields[k])
        elseif w == '0' or w == '1' then
            redis.call('HSET', KEYS[6], fields[k], w)
        end
    end
    -- The syncs renew the key with the room's others; until one does, it lives keep_ms (or as
    -- long as the room's keys, if longer). An emptied hash is gone already.
    if redis.call('EXISTS', KEYS[6]) == 1 then
        redis.call('PEXPIRE', KEYS[6], math.max(tonumber(ARGV[4]), redis.call('PTTL', KEYS[5])))
    end
    return read_overrides()
end

-- A key of another type (clobbered by hand) would fail a sync half-way, after some of its
-- writes: Redis keeps them, the batch mark is not saved, and the node's resend would count them
-- again. So the keys are checked first, before any write: such a sync (or top-up) fails whole,
-- and the node resends it under its batch until the key is fixed. Redis out of memory also
-- refuses the first write, which comes after these checks.
for i = 1, 10 do
    local t = redis.call('TYPE', KEYS[i])['ok']
    if t ~= 'hash' and t ~= 'none' then
        return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. t .. ', not a hash')
    end
end

local node_id = ARGV[2]
local datacenter = ARGV[3]
local now = tonumber(ARGV[4])
local L = {
    total = tonumber(ARGV[5]),
    per_minute = tonumber(ARGV[6]),
    session = tonumber(ARGV[7]),
    abandon = tonumber(ARGV[8]),
    window = tonumber(ARGV[9]),
    rate_window = tonumber(ARGV[10]),
    rate_span = tonumber(ARGV[11]),
    needs_slots = ARGV[12] == '1',
    rejoin = tonumber(ARGV[13]),
}

-- The liveness rules of include/waitroom/room/limits.hpp.
-- The active windows' size: a sixtieth of the session in whole seconds, within [1 s, window]
-- (limits.hpp's active_window_ms, derived from the same arguments).
local active_window = math.max(math.min(1000, L.window),
                               math.min(L.window, math.floor(L.session / 60000) * 1000))
local function active_live(start) return start + active_window + L.session > now end
local function waiting_live(start) return start + L.window + L.abandon > now end
local function rate_live(start) return start + L.rate_window > now - L.rate_span end
local function revocation_live(start)
    return start + 2 * L.window + math.max(L.session, L.rejoin, L.abandon) > now
end
-- The window of a `revoked` hash value ("since:freed"); 0 (long dead) for anything else.
local function revoked_since(v) return tonumber(string.match(v or '', '^(%-?%d+):')) or 0 end
local function floor_to(t, step) return math.floor(t / step) * step end
-- A count as the script writes them: a decimal integer of at most 15 characters (exact in a
-- Lua number, and far from HINCRBY's overflow). Anything else in a
-- hash (an entry written by hand) is not a count: the readers skip it and the writers replace
-- it, so it cannot fail the script half-way (a failed sync's writes stay, its batch mark does
-- not, and its resend would count them again).
local function count(v)
    if type(v) ~= 'string' or #v > 15 or not string.match(v, '^%-?%d+$') then return nil end
    return tonumber(v)
end
-- HINCRBY over whatever the field holds: an entry that is not a count goes first.
local function incr(key, field, d)
    if count(redis.call('HGET', key, field)) == nil then redis.call('HDEL', key, field) end
    redis.call('HINCRBY', key, field, d)
end
-- room::max_revoked_sessions
local MAX_REVOKED = 4096
-- room::max_flagged_tickets
local MAX_FLAGGED = 4096
-- state::max_queued_tickets, and queued_tickets.cpp's highest level
local MAX_QUEUED = 4096
local MAX_LEVEL = 40

-- std::map orders node ids by bytes; Lua's string '<' follows the server's locale. Sorting
-- by bytes keeps the demand sum (floating point) and the datacenter order identical.
local function byte_less(a, b)
    local n = math.min(#a, #b)
    for i = 1, n do
        local x, y = string.byte(a, i), string.byte(b, i)
        if x ~= y then return x < y end
    end
    return #a < #b
end

-- Tickets are decimal strings without leading zeros (std::to_string): shorter is smaller, then
-- bytes decide. Numeric order, also past 2^53 where Lua's numbers would round.
local function ticket_less(a, b)
    if #a ~= #b then return #a < #b end
    return byte_less(a, b)
end

-- Nodes: expire the silent ones (their lease goes with them), touch this one.
local function load_nodes(node_ttl)
    local nodes, ids = {}, {}
    local raw = redis.call('HGETALL', KEYS[4])
    for i = 1, #raw, 2 do
        local id = raw[i]
        local ls, held, demand, batch, granted, tu_id, tu_granted, dc = string.match(
            raw[i + 1], '^(%S+) (%S+) (%S+) (%S+) g(%d+) t(%d+):(%d+) (.*)$')
        if ls == nil then
            ls, held, demand, batch, dc = string.match(raw[i + 1], '^(%S+) (%S+) (%S+) (%S+) (.*)$')
            granted, tu_id, tu_granted = '0', '0', '0'
        end
        ls = tonumber(ls)
        local numbers_ok = tonumber(held) and tonumber(demand) and tonumber(granted) and
                           tonumber(tu_granted)
        if ls == nil or not numbers_ok or ls + node_ttl <= now then
            redis.call('HDEL', KEYS[4], id)  -- expired, or not a record this script wrote
        else
            nodes[id] = {last_seen = ls, held = tonumber(held), demand = tonumber(demand),
                         batch = batch, granted = tonumber(granted), tu_id = tu_id,
                         tu_granted = tonumber(tu_granted), dc = dc}
            ids[#ids + 1] = id
        end
    end
    local me = nodes[node_id]
    local forgotten = me == nil
    if me == nil then
        me = {last_seen = now, held = 0, demand = 0, batch = '0', granted = 0, tu_id = '0',
              tu_granted = 0, dc = datacenter}
        nodes[node_id] = me
        ids[#ids + 1] = node_id
    end
    me.dc = datacenter
    if now > me.last_seen then me.last_seen = now end
    table.sort(ids, byte_less)
    return nodes, ids, me, forgotten
end

local function save_node(id, n)
    -- %.17g round-trips the decayed demand exactly (the default conversion keeps 14 digits).
    redis.call('HSET', KEYS[4], id,
        string.format('%d %d %.17g %s g%d t%s:%d %s', n.last_seen, n.held, n.demand, n.batch,
                      n.granted, n.tu_id, n.tu_granted, n.dc))
end

-- Sum of the live entries of a window hash, each floored at zero (room_ledger.cpp's
-- floored_sum: a cookie replayed N times can empty the window it names, never the others);
-- with prune, dead entries are deleted; with `windows` (a table), the live entries above zero
-- are added to it as {window, count} (room_ledger::counts' lists, see ascending_pairs).
local function live_sum(key, live, prune, windows)
    local raw = redis.call('HGETALL', key)
    local sum = 0
    for i = 1, #raw, 2 do
        local w, v = count(raw[i]), count(raw[i + 1])
        if w ~= nil and v ~= nil and live(w) then
            sum = sum + math.max(0, v)
            if windows ~= nil and v > 0 then windows[#windows + 1] = {w, v} end
        elseif prune then
            redis.call('HDEL', key, raw[i])
        end
    end
    return sum
end

-- {window, count} entries as a reply lists them: ascending by window, flattened.
local function ascending_pairs(windows)
    table.sort(windows, function(x, y) return x[1] < y[1] end)
    local out = {}
    for _, e in ipairs(windows) do
        out[#out + 1] = e[1]
        out[#out + 1] = e[2]
    end
    return out
end

local function capacity(active, admitted)
    if active < 0 then active = 0 end
    if admitted < 0 then admitted = 0 end
    local cap = math.min(L.total - active, L.per_minute - admitted)
    if cap < 0 then cap = 0 end
    return cap
end

local function held_total(nodes, ids)
    local h = 0
    for _, id in ipairs(ids) do h = h + nodes[id].held end
    return h
end

-- room_ledger::demand_total and share_of: the live nodes' decayed demand, summed in byte order
-- of node id as std::map does; one node's share of it (an even split while nobody asked).
local function demand_total(nodes, ids)
    local total = 0
    for _, id in ipairs(ids) do total = total + nodes[id].demand end
    return total
end

local function share_of(nodes, ids, me)
    local total_demand = demand_total(nodes, ids)
    if total_demand > 0 then return me.demand / total_demand end
    return 1.0 / #ids
end

-- room_ledger::near_limit: with other nodes live, free places (`cap`, those leased included)
-- at most twice the live nodes' decayed demand plus two a node. Then nobody leases, and a
-- top-up takes only what its waiting visitors need.
local function near_limit(nodes, ids, cap)
    return #ids > 1 and cap <= 2 * demand_total(nodes, ids) + 2 * #ids
end

-- Nothing accumulates: every key outlives its longest-lived entry by a minute, then goes.
-- (room_ledger::seen_ttl)
local function keys_ttl(node_ttl)
    return math.max(L.session + L.window, L.window + L.abandon,
                    L.rate_span + L.rate_window, node_ttl,
                    2 * L.window + math.max(L.session, L.rejoin, L.abandon)) + 60000
end
local function set_ttls(node_ttl)
    local ttl = keys_ttl(node_ttl)
    for i = 1, 10 do redis.call('PEXPIRE', KEYS[i], ttl) end
end

-- The space-separated counts of a meta value as this script writes them (see count), or nil
-- for anything else: a value written by hand is neither read nor counted, and the next write
-- of its field replaces it.
local function counts_of(v)
    if type(v) ~= 'string' then return nil end
    local out = {}
    for tok in string.gmatch(v, '%S+') do
        local n = count(tok)
        if n == nil then return nil end
        out[#out + 1] = n
    end
    return out
end

-- The meta hash's seen:<id> records (with `prune_ttl`, those older are deleted, and so is a
-- record this script did not write) and the ghost window {from, to, until}.
local function load_seen(prune_ttl)
    local seen, ghosts, answers, leaving = {}, {0, 0, 0}, {}, {}
    local raw = redis.call('HGETALL', KEYS[5])
    for i = 1, #raw, 2 do
        local id = string.match(raw[i], '^seen:(.*)$')
        if id ~= nil then
            -- "last_seen held peers free_active": held, free ≥ 0 and peers ≥ 1 as written below
            local v = counts_of(raw[i + 1])
            local ok = v ~= nil and #v == 4 and v[2] >= 0 and v[3] >= 1 and v[4] >= 0
            if not ok or (prune_ttl ~= nil and v[1] + prune_ttl <= now) then
                redis.call('HDEL', KEYS[5], raw[i])
            else
                seen[id] = {ls = v[1], held = v[2], peers = v[3], free = v[4]}
            end
        elseif string.match(raw[i], '^answers:') then
            answers[string.sub(raw[i], 9)] = raw[i + 1]
        elseif string.match(raw[i], '^leaving:') then
            leaving[string.sub(raw[i], 9)] = raw[i + 1]
        elseif raw[i] == 'ghosts' then
            local v = counts_of(raw[i + 1])
            if v ~= nil and #v == 3 then ghosts = v end
        end
    end
    -- leaving:<id>: "rate active", the reserve of a node that may still be degraded
    for id, a in pairs(leaving) do
        local v = counts_of(a)
        if seen[id] == nil then
            if prune_ttl ~= nil then redis.call('HDEL', KEYS[5], 'leaving:' .. id) end
        elseif v ~= nil and #v == 2 and v[1] >= 0 and v[2] >= 0 then
            seen[id].leaving = v
        end
    end
    -- answers:<id>: "ls peers free ..." of the node's recent syncs (room_ledger::seen_entry); a
    -- list with anything else in it reads as none (its node's next sync writes it anew)
    for id, a in pairs(answers) do
        if seen[id] == nil then
            if prune_ttl ~= nil then redis.call('HDEL', KEYS[5], 'answers:' .. id) end
        else
            local v = counts_of(a)
            local list = {}
            if v ~= nil and #v % 3 == 0 then
                for k = 1, #v, 3 do
                    if v[k + 1] < 1 or v[k + 2] < 0 then
                        list = {}
                        break
                    end
                    list[#list + 1] = {v[k], v[k + 1], v[k + 2]}
                end
            end
            seen[id].answers = list
        end
    end
    return seen, ghosts
end

local function save_seen(id, e)
    redis.call('HSET', KEYS[5], 'seen:' .. id,
               string.format('%d %d %d %d', e.ls, e.held, e.peers, e.free))
end

-- room_ledger::allowance_bound: the most a node may admit from its allowance unreported
-- (sync_degraded.cpp: 1 / peers of new_users_per_minute in any sliding minute, 1 / peers of the
-- free active places over its episode), by its last sync's answer or any of its recent ones
-- (answers:<id>): {rate limit, active limit}.
local function allowance_bound(e)
    local peers = math.max(1, e.peers)
    local by_rate, by_act = math.floor(L.per_minute / peers), math.floor(e.free / peers)
    for _, a in ipairs(e.answers or {}) do
        local p = math.max(1, a[2])
        by_rate = math.max(by_rate, math.floor(L.per_minute / p))
        by_act = math.max(by_act, math.floor(a[3] / p))
    end
    return by_rate, by_act
end

-- room_ledger::ghosts_open: the window holds now, and its end is no further ahead of this
-- node's clock than another node TTL (a wrong clock, or a value written by hand, would hold
-- every grant back for as long as it is ahead).
local function ghosts_open(ghosts, node_ttl)
    return now < ghosts[3] and ghosts[3] <= now + 2 * node_ttl
end

-- room_ledger::ghost_reserve: {rate limit, active limit} kept from grants for the nodes last
-- seen in the ghost window, each its allowance_bound plus, once the store forgot it, its lease,
-- which it may have used unreported; and for the nodes that reported leaving degraded mode and
-- have not shown an answer since (leaving:<id>), but `asking` (nil: none) for its own.
local function ghost_reserve(seen, ghosts, nodes, node_ttl, asking)
    local rate, act = 0, 0
    for id, e in pairs(seen) do
        local ghost = ghosts_open(ghosts, node_ttl) and e.ls > ghosts[1] and e.ls < ghosts[2]
        local leaving = e.leaving ~= nil and id ~= asking and now < e.ls + node_ttl and
                        e.ls <= now + node_ttl
        if ghost or leaving then
            local r, a = 0, 0
            if ghost then r, a = allowance_bound(e) end
            if leaving then r, a = math.max(r, e.leaving[1]), math.max(a, e.leaving[2]) end
            local lease = 0
            if ghost and nodes[id] == nil then lease = e.held end
            rate = rate + lease + r
            act = act + lease + a
        end
    end
    return rate, act
end

-- capacity() less the reserve (but `asking`'s own while it leaves degraded mode), less the
-- slots leased (room_ledger::free_unheld).
local function free_unheld_of(active, admitted, seen, ghosts, nodes, ids, node_ttl, asking)
    local rr, ra = ghost_reserve(seen, ghosts, nodes, node_ttl, asking)
    if active < 0 then active = 0 end
    if admitted < 0 then admitted = 0 end
    local cap = math.min(L.total - active - ra, L.per_minute - admitted - rr)
    if cap < 0 then cap = 0 end
    return math.max(0, cap - held_total(nodes, ids))
end

if op == 'top_up' then
    local node_ttl = tonumber(redis.call('HGET', KEYS[5], 'node_ttl')) or 3000
    local want = tonumber(ARGV[14])
    local nodes, ids, me = load_nodes(node_ttl)
    local granted = 0
    local m = redis.call('HMGET', KEYS[5], 'epoch', 'refill_until', 'ghost_hold')
    local epoch_ok = ARGV[15] == '' or ARGV[15] == m[1]
    local refilling = now < (count(m[2]) or 0) and m[2] ~= m[3]
    local seen, ghosts = load_seen(nil)
    if L.needs_slots and want > 0 and epoch_ok and not refilling then
        local active = live_sum(KEYS[2], active_live, false)
        local admitted = live_sum(KEYS[1], rate_live, false)
        -- The node's renewals out of windows no longer counted hold active places (not the
        -- rate: a renewal is no new visitor).
        local unreported = math.max(0, count(ARGV[18]) or 0)
        local free_unheld = free_unheld_of(active + unreported, admitted, seen, ghosts, nodes,
                                           ids, node_ttl, node_id)
        -- With other nodes live, one top-up takes at most half of what nobody holds, and at
        -- most the node's share of it or an even split, whichever is more (at least one): the
        -- next node to run dry finds some too.
        local most = free_unheld
        if #ids > 1 then
            local share = math.max(share_of(nodes, ids, me), 1.0 / #ids)
            most = math.min(math.floor((free_unheld + 1) / 2),
                            math.max(1, math.floor(free_unheld * share)))
        end
        -- Near the limit, no more than the visitors waiting for it need (0 or absent, from an
        -- older node: not told).
        local need = tonumber(ARGV[17]) or 0
        if need > 0 and near_limit(nodes, ids, capacity(active, admitted)) then
            most = math.min(most, need)
        end
        granted = math.min(want, most)
        me.held = me.held + granted
    end
    -- Remembered until the node's next sync, which may say that it never got this answer.
    me.tu_id = ARGV[16] or '0'
    me.tu_granted = granted
    save_node(node_id, me)
    if seen[node_id] ~= nil then
        seen[node_id].held = me.held
        save_seen(node_id, seen[node_id])
    end
    set_ttls(node_ttl)
    return granted
end

-- sync
local node_ttl = tonumber(ARGV[14])
redis.call('HSET', KEYS[5], 'node_ttl', ARGV[14])
local m = redis.call('HMGET', KEYS[5], 'epoch', 'epoch_at', 'refill_until', 'ghost_hold')
local epoch, epoch_at, refill_until = m[1], tonumber(m[2]) or now, count(m[3]) or 0
-- A refill_until written for older scripts (see ghost_hold) holds no grant of this one.
local held_for_old = m[3] ~= nil and m[3] == m[4]
if not epoch then
    epoch = ARGV[4] .. '/' .. node_id
    redis.call('HSET', KEYS[5], 'epoch', epoch, 'epoch_at', ARGV[4])
end
local nodes, ids, me, forgotten = load_nodes(node_ttl)
local seen, ghosts = load_seen(keys_ttl(node_ttl))

-- A resend of the batch this node last had applied (its answer was lost) changes no count:
-- counting it again would count its visitors twice.
local applied_before = ARGV[18] ~= '0' and ARGV[18] == me.batch
-- Deltas from a node that knew another epoch add to counts this store never had: it must
-- re-report all of its live windows instead (nothing saved, not even its heartbeat).
local full = ARGV[20] ~= '-1'
if not applied_before and not full and ARGV[19] ~= '' and ARGV[19] ~= epoch then
    -- The store lost its memory: until every live node has re-reported (one node TTL after
    -- the epoch began) its counts are short, and it grants nothing. (A refill_until that is a
    -- ghost hold, written for older scripts, is none: room_ledger keeps the two apart.)
    if refill_until == 0 or held_for_old then
        redis.call('HSET', KEYS[5], 'refill_until', string.format('%d', epoch_at + node_ttl))
        redis.call('HDEL', KEYS[5], 'ghost_hold')
    end
    return 'stale'
end
me.batch = ARGV[18]
local prev_seen = nil
if seen[node_id] ~= nil then prev_seen = seen[node_id].ls end
-- It reports now: no ghost of its own.
if seen[node_id] == nil then seen[node_id] = {ls = now, held = 0, peers = 1, free = 0} end
seen[node_id].ls = now

-- The queue's distinct tickets (state/queued_tickets.cpp, step for step).
local function level_of(bucket)
    return count(redis.call('HGET', KEYS[9], bucket)) or 0
end
-- A `queued` value: bucket, window, rank; nil for anything this script did not write.
local function queued_entry(v)
    local b, w, r = string.match(v or '', '^(%-?%d+):(%-?%d+):(%d+)$')
    if b == nil then return nil end
    return count(b), count(w), tonumber(r)
end
local function bw_field(b, w) return string.format('%d:%d', b, w) end

-- queued_tickets::check_in: counted once, in its latest window; out of its bucket's sample, not
-- kept at all.
local function queue_check_in(ticket, b, w, rank)
    local wn = tonumber(w)
    if not waiting_live(wn) then return end
    local sampled = rank >= level_of(b)
    local eb, ew = queued_entry(redis.call('HGET', KEYS[8], ticket))
    if eb ~= nil and ew ~= nil then
        local live = waiting_live(ew)
        if live and ew >= wn then return end
        if live then incr(KEYS[3], bw_field(eb, ew), -1) end
        if not sampled then
            redis.call('HDEL', KEYS[8], ticket)
            return
        end
    elseif not sampled then
        return
    end
    redis.call('HSET', KEYS[8], ticket, b .. ':' .. w .. ':' .. rank)
    incr(KEYS[3], b .. ':' .. w, 1)
end

-- queued_tickets::leave
local function queue_leave(ticket)
    local eb, ew = queued_entry(redis.call('HGET', KEYS[8], ticket))
    if eb ~= nil and ew ~= nil and waiting_live(ew) then incr(KEYS[3], bw_field(eb, ew), -1) end
    redis.call('HDEL', KEYS[8], ticket)
end

-- queued_tickets::bound: past MAX_QUEUED, dead entries go, then the largest bucket (the oldest
-- of equals) is sampled one level further until three quarters of it remain.
local function bound_queue()
    if redis.call('HLEN', KEYS[8]) <= MAX_QUEUED then return end
    local raw = redis.call('HGETALL', KEYS[8])
    local entries, size = {}, 0
    for k = 1, #raw, 2 do
        local b, w, r = queued_entry(raw[k + 1])
        if b == nil or w == nil or not waiting_live(w) then
            redis.call('HDEL', KEYS[8], raw[k])
        else
            entries[raw[k]] = {b, w, r}
            size = size + 1
        end
    end
    while size > MAX_QUEUED / 4 * 3 do
        local sizes = {}
        for _, e in pairs(entries) do sizes[e[1]] = (sizes[e[1]] or 0) + 1 end
        local best, most = nil, -1
        for b, c in pairs(sizes) do
            if level_of(string.format('%d', b)) < MAX_LEVEL and
               (c > most or (c == most and b < best)) then
                best, most = b, c
            end
        end
        if best == nil then break end
        local to = level_of(string.format('%d', best)) + 1
        redis.call('HSET', KEYS[9], string.format('%d', best), to)
        for t, e in pairs(entries) do
            if e[1] == best and e[3] < to then
                incr(KEYS[3], bw_field(e[1], e[2]), -1)
                redis.call('HDEL', KEYS[8], t)
                entries[t] = nil
                size = size - 1
            end
        end
    end
end

-- room_ledger::apply_flags: live entries kept, new ones from now's window, the oldest forgotten
-- past MAX_FLAGGED (by since, then ticket as numbers).
local function apply_flags(fresh)
    local known, ages = {}, {}
    local raw = redis.call('HGETALL', KEYS[10])
    for k = 1, #raw, 2 do
        local since = count(raw[k + 1])
        if since ~= nil and revocation_live(since) then
            known[raw[k]] = true
            ages[#ages + 1] = {since, raw[k]}
        else
            redis.call('HDEL', KEYS[10], raw[k])
        end
    end
    local since = floor_to(now, L.window)
    for _, t in ipairs(fresh) do
        if not known[t] then
            known[t] = true
            ages[#ages + 1] = {since, t}
            redis.call('HSET', KEYS[10], t, string.format('%d', since))
        end
    end
    if #ages > MAX_FLAGGED then
        table.sort(ages, function(x, y)
            if x[1] ~= y[1] then return x[1] < y[1] end
            return ticket_less(x[2], y[2])
        end)
        for k = 1, #ages - MAX_FLAGGED do redis.call('HDEL', KEYS[10], ages[k][2]) end
    end
end

-- Deltas for windows that stopped counting change nothing: skip them rather than resurrect.
-- merge_windows(i, live, key): the count at ARGV[i], then that many (window, delta) pairs
-- added to hash `key` where `live(window)`; returns the index after them.
local function merge_windows(i, live, key)
    local n = tonumber(ARGV[i])
    for j = 1, n do
        local w, d = ARGV[i + 2 * j - 1], ARGV[i + 2 * j]
        if live(tonumber(w)) then incr(key, w, d) end
    end
    return i + 2 * n + 1
end

if not applied_before then
    -- room_ledger::charge_restarted: a report naming no epoch comes from a process that has had
    -- no answer for the room (the node restarted). If the node was a ghost (or this report, leaving
    -- degraded mode, makes it one) or was marked leaving, its previous process may have admitted
    -- from its allowance what it never reports: that most is added to the counts now.
    if prev_seen ~= nil and ARGV[19] == '' and not full then
        local old = seen[node_id]
        local ghost = tonumber(ARGV[#ARGV - 1]) >= 0 or
                      (ghosts_open(ghosts, node_ttl) and prev_seen > ghosts[1] and
                       prev_seen < ghosts[2])
        local leaving = old.leaving ~= nil and now < prev_seen + node_ttl and
                        prev_seen <= now + node_ttl
        local r, a = 0, 0
        if ghost then
            r, a = allowance_bound(old)
            if forgotten then r, a = r + old.held, a + old.held end
        end
        if leaving then r, a = math.max(r, old.leaving[1]), math.max(a, old.leaving[2]) end
        if r > 0 then incr(KEYS[1], string.format('%d', floor_to(now, math.max(1, L.rate_window))), r) end
        if a > 0 then incr(KEYS[2], string.format('%d', floor_to(now, active_window)), a) end
    end
    local i = merge_windows(21, rate_live, KEYS[1])
    i = merge_windows(i, active_live, KEYS[2])
    local n = tonumber(ARGV[i])
    for j = 1, n do
        local b, w, d = ARGV[i + 3 * j - 2], ARGV[i + 3 * j - 1], ARGV[i + 3 * j]
        -- Counts without tickets: a re-report's (queued_tickets::add_count)
        if full and waiting_live(tonumber(w)) then incr(KEYS[3], b .. ':' .. w, d) end
    end
    i = i + 3 * n + 1
    -- Revocations (room_ledger::apply_revocations): a ticket's place is freed once, by its
    -- first revocation that names a live window; every later one (a replayed command, a
    -- re-report) changes nothing, and one without a window (-1) only records the ticket.
    local known, size, ages = {}, 0, {}
    local rev = redis.call('HGETALL', KEYS[7])
    for k = 1, #rev, 2 do
        local since = revoked_since(rev[k + 1])
        if revocation_live(since) then
            known[rev[k]] = string.sub(rev[k + 1], -1) == '1'
            size = size + 1
            ages[size] = {since, rev[k]}
        else
            redis.call('HDEL', KEYS[7], rev[k])
        end
    end
    n = tonumber(ARGV[i])
    -- Full: the oldest tickets are forgotten first (src/state/refused_tickets.hpp), in the
    -- order (since, ticket) with tickets compared as numbers.
    local fresh = 0
    for j = 1, n do
        if known[ARGV[i + 2 * j - 1]] == nil then fresh = fresh + 1 end
    end
    if size + fresh > MAX_REVOKED then
        -- Whole windows of `since` first (few, window-aligned), and only the last window
        -- touched sorted by ticket: no sort of the whole list on every sync of a full room.
        local drop = math.min(size, size + fresh - MAX_REVOKED)
        local windows, by_window = {}, {}
        for _, e in ipairs(ages) do
            local g = by_window[e[1]]
            if g == nil then
                g = {}
                by_window[e[1]] = g
                windows[#windows + 1] = e[1]
            end
            g[#g + 1] = e[2]
        end
        table.sort(windows)
        for _, since in ipairs(windows) do
            if drop == 0 then break end
            local g = by_window[since]
            if #g > drop then table.sort(g, ticket_less) end
            local take = math.min(drop, #g)
            for j = 1, take do
                redis.call('HDEL', KEYS[7], g[j])
                known[g[j]] = nil
            end
            size = size - take
            drop = drop - take
        end
    end
    for j = 1, n do
        local ticket, w = ARGV[i + 2 * j - 1], ARGV[i + 2 * j]
        local since = nil
        -- (past the bound only when one report alone brought more than it)
        if known[ticket] == nil and size < MAX_REVOKED then
            known[ticket] = false
            size = size + 1
            since = floor_to(now, L.window)
        end
        local wn = tonumber(w)
        if known[ticket] == false and wn >= 0 and active_live(wn) then
            incr(KEYS[2], w, -1)
            known[ticket] = true
            if since == nil then since = revoked_since(redis.call('HGET', KEYS[7], ticket)) end
            redis.call('HSET', KEYS[7], ticket, string.format('%d:1', since))
        elseif since ~= nil then
            redis.call('HSET', KEYS[7], ticket, string.format('%d:0', since))
        end
    end
    i = i + 2 * n + 1
    -- The queue's tickets (queued_tickets.cpp): checked in, out, then held to the bound.
    n = tonumber(ARGV[i])
    for j = 1, n do
        local k = i + 4 * (j - 1)
        queue_check_in(ARGV[k + 1], ARGV[k + 2], ARGV[k + 3], tonumber(ARGV[k + 4]))
    end
    i = i + 4 * n + 1
    n = tonumber(ARGV[i])
    for j = 1, n do queue_leave(ARGV[i + j]) end
    i = i + n + 1
    bound_queue()
    n = tonumber(ARGV[i])
    local flags = {}
    for j = 1, n do flags[#flags + 1] = ARGV[i + j] end
    apply_flags(flags)
end

-- The minute's admissions by sub-window and the places by check-in window, as
-- room_ledger::counts lists them (live, above zero), from the same reads as the sums.
local admitted_windows, active_windows = {}, {}
local admitted = live_sum(KEYS[1], rate_live, true, admitted_windows)
local active = live_sum(KEYS[2], active_live, true, active_windows)
-- A session with more live check-in windows than a reply lists (over ~40 minutes) lists them by
-- runs on fixed boundaries, labelled by their start (limits.hpp's active_run_ms).
do
    local live = math.floor(L.session / active_window) + 2
    local most = 240  -- max_active_windows - 16
    local active_run = active_window * math.max(1, math.floor((live + most - 1) / most))
    local runs, starts = {}, {}
    for _, e in ipairs(active_windows) do
        local r = floor_to(e[1], active_run)
        if runs[r] == nil then
            runs[r] = 0
            starts[#starts + 1] = r
        end
        runs[r] = runs[r] + e[2]
    end
    active_windows = {}
    for _, r in ipairs(starts) do active_windows[#active_windows + 1] = {r, runs[r]} end
end

-- Waiting: prune, then sum per bucket in ascending order, each (bucket, window) floored at zero
-- as above, dropping buckets that sum to 0.
local per_bucket, buckets = {}, {}
local abandoned = 0
local raw = redis.call('HGETALL', KEYS[3])
for k = 1, #raw, 2 do
    local b, w = string.match(raw[k], '^(-?%d+):(-?%d+)$')
    b, w = count(b), count(w)
    local v = count(raw[k + 1])
    if b == nil or w == nil or v == nil or not waiting_live(w) then
        if b ~= nil and w ~= nil and v ~= nil then
            abandoned = abandoned + math.max(0, v) * 2 ^ level_of(string.format('%d', b))
        end
        redis.call('HDEL', KEYS[3], raw[k])
    else
        if per_bucket[b] == nil then
            per_bucket[b] = 0
            buckets[#buckets + 1] = b
        end
        per_bucket[b] = per_bucket[b] + math.max(0, v)
    end
end
table.sort(buckets)
-- Each bucket's count stands for 2^level visitors a ticket; a bucket none of whose windows
-- counts any more keeps no level (queued_tickets::prune).
do
    local lv = redis.call('HGETALL', KEYS[9])
    local levels = {}
    for k = 1, #lv, 2 do
        local b = count(lv[k])
        if b == nil or per_bucket[b] == nil then
            redis.call('HDEL', KEYS[9], lv[k])
        else
            levels[b] = count(lv[k + 1]) or 0
        end
    end
    for _, b in ipairs(buckets) do per_bucket[b] = per_bucket[b] * 2 ^ (levels[b] or 0) end
end

if not applied_before then
    -- The node's exact held slots: sent only by a node leaving degraded mode (with a re-report
    -- too, from this version on: the script before ignored it there).
    local exact = tonumber(ARGV[#ARGV - 1])
    if full then
        me.held = math.max(0, tonumber(ARGV[20]))
    else
        if exact >= 0 then
            me.held = exact
            -- The node leaves degraded mode: the store was away. The nodes live when it last
            -- synced and silent since the first node came back are reserved for until they
            -- sync, or one node TTL after the last node back (room_ledger.cpp).
            local from = -1
            if prev_seen ~= nil then from = prev_seen - node_ttl end
            local open = ghosts_open(ghosts, node_ttl)
            if not open then
                ghosts[1], ghosts[2] = from, now
            else
                ghosts[1] = math.min(ghosts[1], from)
                if prev_seen == nil or prev_seen >= ghosts[2] then ghosts[2] = now end
            end
            -- A window that is not open starts from now (room_ledger.cpp).
            if open then
                ghosts[3] = math.max(ghosts[3], now + node_ttl)
            else
                ghosts[3] = now + node_ttl
            end
            redis.call('HSET', KEYS[5], 'ghosts',
                       string.format('%d %d %d', ghosts[1], ghosts[2], ghosts[3]))
        else
            me.held = math.max(0, me.held - tonumber(ARGV[15]) - tonumber(ARGV[16]))
        end
        -- A top-up whose answer the node never got: its slots are in no pool (an exact count
        -- already leaves them out).
        local lost = ARGV[#ARGV]
        if lost ~= '0' and lost == me.tu_id then
            if exact < 0 then me.held = math.max(0, me.held - me.tu_granted) end
            me.tu_id, me.tu_granted = '0', 0
        end
    end
    -- Leaving degraded mode, the node is reserved as a silent node was, by the answers it had,
    -- until a report that is not (one of a node that got an answer since) clears it
    -- (room_ledger::sync). A node this store has no record of may have had any answer.
    -- Mixed versions: nodes of every version send their exact count while, and only while, they
    -- leave degraded mode, so an older node is cleared alike (its re-reports to a store that lost
    -- its memory send none, and clear it); an older script keeps no leaving:<id>, and drops the
    -- node's reserve at the report that leaves degraded mode, as before.
    local se = seen[node_id]
    if exact >= 0 then
        local r, a = L.per_minute, L.total
        if prev_seen ~= nil then r, a = allowance_bound(se) end
        if se.leaving ~= nil then r, a = math.max(r, se.leaving[1]), math.max(a, se.leaving[2]) end
        se.leaving = {r, a}
        redis.call('HSET', KEYS[5], 'leaving:' .. node_id, string.format('%d %d', r, a))
    else
        se.leaving = nil
        redis.call('HDEL', KEYS[5], 'leaving:' .. node_id)
    end
    -- Demand decays by half each sync: the share follows the last couple of intervals.
    me.demand = me.demand / 2 + tonumber(ARGV[17])
else
    -- The node never got this batch's answer, nor the slots it granted: they are in no pool.
    me.held = math.max(0, me.held - me.granted)
end

local granted, release = 0, 0
if L.needs_slots then
    -- Capacity includes the slots already leased: the lease target is this node's share of
    -- it, and a grant never exceeds what no node holds yet. The target is also capped at the
    -- node's decayed demand + 1, so the rest of the free capacity stays free for top-ups.
    local cap = capacity(active, admitted)
    local free_unheld = free_unheld_of(active, admitted, seen, ghosts, nodes, ids, node_ttl,
                                       node_id)
    local rr, ra = ghost_reserve(seen, ghosts, nodes, node_ttl, nil)
    local reserved = rr + ra
    if now < refill_until and not held_for_old then free_unheld = 0 end
    -- Older scripts know no reserve: while one is held they grant nothing (refill_until), unless
    -- a hold of their own is under way.
    if reserved > 0 and (now >= refill_until or held_for_old) then
        -- Never further ahead than an open window can end: a far end (a clock ahead, a value
        -- written by hand) would hold older scripts back for as long.
        local hold = string.format('%d', math.min(ghosts[3], now + 2 * node_ttl))
        redis.call('HSET', KEYS[5], 'refill_until', hold, 'ghost_hold', hold)
    end
    local share = share_of(nodes, ids, me)
    -- With other nodes live, a lease takes half of the node's share: the other half stays
    -- unheld for top-ups, which go to whichever node runs dry first.
    -- Alone: all of the capacity; with others live: half the share, rounded down (see
    -- room_ledger.cpp: a small room then leases nothing and admits by exact top-ups).
    local by_share = cap
    if #ids > 1 then by_share = math.floor(cap * share / 2) end
    -- Alone and without recent demand (below one request, decayed) a node leases nothing; with
    -- others live, nor does a node that reports no demand for the interval: the store takes
    -- back a lease not used for an interval, and the node hands its unused slots back in this
    -- same report (room_ledger.cpp).
    local idle
    if #ids > 1 then idle = tonumber(ARGV[17]) == 0 else idle = me.demand < 1 end
    local by_demand = 0
    if not idle then by_demand = math.ceil(me.demand / 2) + 1 end
    local target = math.min(by_share, by_demand)
    -- Near the limit no node leases: the last free places go by exact top-ups.
    if near_limit(nodes, ids, cap) then target = 0 end
    -- With others live, one grant takes at most the node's share of what nobody holds.
    local most = free_unheld
    if #ids > 1 then most = math.floor(free_unheld * share) end
    granted = math.min(math.max(target - me.held, 0), most)
    release = math.max(0, me.held - target)
    me.held = me.held + granted
else
    release = me.held  -- a room that admits nobody from slots gives them all back
end
me.granted = granted
save_node(node_id, me)
save_seen(node_id, {ls = now, held = me.held, peers = #ids, free = math.max(0, L.total - active)})
-- The answers of its syncs in the last two node TTLs, this one's included (the node sizes its
-- allowance from the last answer it got, which may be an earlier one: room_ledger.hpp).
do
    local kept = {}
    for _, a in ipairs((seen[node_id] and seen[node_id].answers) or {}) do
        if a[1] + 2 * node_ttl >= now then
            kept[#kept + 1] = string.format('%d %d %d', a[1], a[2], a[3])
        end
    end
    kept[#kept + 1] = string.format('%d %d %d', now, #ids, math.max(0, L.total - active))
    redis.call('HSET', KEYS[5], 'answers:' .. node_id, table.concat(kept, ' '))
end
set_ttls(node_ttl)

local waiting = {}
for _, b in ipairs(buckets) do
    if per_bucket[b] > 0 then
        waiting[#waiting + 1] = b
        waiting[#waiting + 1] = per_bucket[b]
    end
end
local dcs, dc_index = {}, {}
for _, id in ipairs(ids) do
    local dc = nodes[id].dc
    if dc_index[dc] == nil then
        dcs[#dcs + 1] = dc
        dcs[#dcs + 1] = 0
        dc_index[dc] = #dcs
    end
    dcs[dc_index[dc]] = dcs[dc_index[dc]] + 1
end
local revoked = {}
local rev = redis.call('HGETALL', KEYS[7])
for k = 1, #rev, 2 do
    if revocation_live(revoked_since(rev[k + 1])) then revoked[#revoked + 1] = rev[k] end
end
local flagged = {}
local fl = redis.call('HGETALL', KEYS[10])
for k = 1, #fl, 2 do
    local since = count(fl[k + 1])
    if since ~= nil and revocation_live(since) then flagged[#flagged + 1] = fl[k] end
end
return {granted, release, active, admitted,
        held_total(nodes, ids), waiting, dcs, read_overrides(), epoch, revoked, abandoned,
        ascending_pairs(admitted_windows), ascending_pairs(active_windows), flagged}
