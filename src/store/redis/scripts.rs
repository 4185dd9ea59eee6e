//! The Lua scripts: each is one atomic step on keys of one cluster slot: a host's own
//! (`keys::HostKeys`) or a host's part in one shard (`keys::PartKeys`). Every
//! script is safe to run again after a lost reply: `trawl` retries calls while Redis is
//! away, so a script may run twice for one intent.
//!
//! Times come from the Redis server's clock (`TIME`), so processes on machines whose
//! clocks disagree still share one schedule per host.

use std::sync::LazyLock;

use redis::Script;

use super::records::EDGES_FIELD;

const NOW: &str = "local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
";

/// `bulk(command, key, values)`: one call of a command that takes many values (`HMGET`
/// fields, `HSET` and `ZADD` pairs, `LPUSH` elements) for a batch, in chunks of 1,000
/// (Lua's `unpack` has a limit), returning the array replies joined; nothing for no
/// values. Each `redis.call` costs this Redis's Lua several microseconds over the command
/// itself (converting arguments and reply): with one call per URL, a docs crawl's scripts
/// made ~20 calls a page (SLOWLOG count, 2026-12-07; the saving is not yet benchmarked).
const BULK: &str = "local function bulk(cmd, key, values)
  local out = {}
  for i = 1, #values, 1000 do
    local r = redis.call(cmd, key, unpack(values, i, math.min(i + 999, #values)))
    if type(r) == 'table' then
      for _, x in ipairs(r) do out[#out + 1] = x end
    end
  end
  return out
end
";

/// Admit URLs of one host in one shard. KEYS: seen, queue, variants, out, counts. ARGV:
/// how many more of the host's URLs may be queued for `max-pages-per-host` and how many
/// for `max-pages` (both reserved in other slots before the call; -1: no limit), `front`
/// or `back`, max-depth (0: none), max-query-variants (0: none), then per
/// URL: key hash, queue element, row JSON (for the results stream), skip reason as judged
/// where it was found (empty to queue it), the depth it was found at, 1 if found by a
/// followed link, the hash of its query group (empty for a URL without a query).
///
/// A URL's `seen` value is its depth and a letter: `q` to fetch (queued, leased or waiting
/// to retry), `x` finished (stored, or skipped for good), `D` held back as too deep, `N`
/// held back as linked only from `nofollow` pages, `M` a sitemap document (stored when
/// read). Its first `seen` value is the one place a URL becomes known: exactly one process
/// admits it. A known URL found again keeps the shorter depth; held back, it is queued
/// when a shorter path brings it within `max-depth` or a followed link turns up: the rules
/// of the local visited set.
///
/// What changed goes to the results stream as one entry of lines `CODE \t SKIP \t DEPTH \t
/// ROW`: `n` a new URL, `d` a shorter depth, `q` queued after being held back.
/// Returns {queued, how many counted against `max-pages-per-host`, per URL: 1 new, 2
/// queued after being held back, 0 otherwise}.
pub static ADMIT: LazyLock<Script> = LazyLock::new(|| {
    let letters: Vec<String> = SEEN_LETTERS
        .iter()
        .map(|(skip, letter)| format!("['{skip}'] = '{letter}'"))
        .collect();
    let letter = format!("local letter = {{{}}}\n", letters.join(", "));
    Script::new(&[BULK, ADMIT_HEAD, &letter, ADMIT_BODY].concat())
});

/// A `seen` letter per skip reason judged at admission (empty: to fetch); `x` for any
/// other. Written once for the admission script and for URLs made known from a file
/// (`reuse`).
pub(super) const SEEN_LETTERS: [(&str, char); 4] = [
    ("", 'q'),
    ("max-depth", 'D'),
    ("nofollow", 'N'),
    ("sitemap", 'M'),
];

/// The `seen` letter of a URL skipped for `skip` (empty: to fetch).
pub(super) fn seen_letter(skip: &str) -> char {
    SEEN_LETTERS
        .iter()
        .find(|(s, _)| *s == skip)
        .map_or('x', |(_, l)| *l)
}

const ADMIT_HEAD: &str = "local host_allow = tonumber(ARGV[1])
local allow = tonumber(ARGV[2])
local front = ARGV[3] == 'front'
local max_depth = tonumber(ARGV[4])
local max_variants = tonumber(ARGV[5])
";

const ADMIT_BODY: &str = "local queued, skipped, host_used = 0, 0, 0
local flags, lines, pushes = {}, {}, {}
local function budget(skip, group)
  if skip == '' and max_variants > 0 and group ~= ''
     and redis.call('HINCRBY', KEYS[3], group, 1) > max_variants then
    skip = 'max-query-variants'
  end
  if skip == '' and host_allow >= 0 then
    if host_used >= host_allow then skip = 'max-pages-per-host' else host_used = host_used + 1 end
  end
  if skip == '' and allow >= 0 and queued >= allow then
    skip = 'max-pages'
  end
  return skip
end
local function enqueue(el)
  queued = queued + 1
  pushes[#pushes + 1] = el
end
local hashes = {}
for i = 6, #ARGV, 7 do hashes[#hashes + 1] = ARGV[i] end
local known = bulk('HMGET', KEYS[1], hashes)
-- What this call changed, by hash, and in what order: a URL may come twice in one call.
local now_seen, changed = {}, {}
local function set(hash, v)
  if not now_seen[hash] then changed[#changed + 1] = hash end
  now_seen[hash] = v
end
for j = 1, #hashes do
  local i = 6 + (j - 1) * 7
  local hash, el, row, skip = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local depth, follow, group = tonumber(ARGV[i + 4]), ARGV[i + 5] == '1', ARGV[i + 6]
  local flag = 0
  local v = now_seen[hash] or known[j]
  if not v then
    skip = budget(skip, group)
    set(hash, depth .. (letter[skip] or 'x'))
    if skip == '' then enqueue(el) else skipped = skipped + 1 end
    lines[#lines + 1] = 'n\\t' .. skip .. '\\t' .. depth .. '\\t' .. row
    flag = 1
  else
    local d, was = tonumber(string.sub(v, 1, -2)), string.sub(v, -1)
    local f = was
    local shorter = depth < d
    if shorter then d = depth end
    local within = max_depth == 0 or d <= max_depth
    local release = (f == 'D' and shorter and within) or (f == 'N' and follow and within)
    if f == 'N' and follow and not within then f = 'D' end
    if release and budget('', group) == '' then
      f = 'q'
      enqueue(el)
      flag = 2
      lines[#lines + 1] = 'q\\t\\t' .. d .. '\\t' .. row
    elseif shorter then
      lines[#lines + 1] = 'd\\t\\t' .. d .. '\\t' .. row
    end
    if shorter or f ~= was then set(hash, d .. f) end
  end
  flags[#flags + 1] = flag
end
local writes = {}
for _, h in ipairs(changed) do
  writes[#writes + 1] = h
  writes[#writes + 1] = now_seen[h]
end
bulk('HSET', KEYS[1], writes)
-- One LPUSH of many elements leaves them as one LPUSH each would: the last ahead.
bulk(front and 'LPUSH' or 'RPUSH', KEYS[2], pushes)
if #lines > 0 then
  redis.call('XADD', KEYS[4], '*', 't', 'a', 'r', table.concat(lines, '\\n'))
end
if skipped > 0 then redis.call('HINCRBY', KEYS[5], 'skipped', skipped) end
return {queued, host_used, flags}";

/// Take request slots of one host. KEYS: state, tokens. ARGV: per-host limit, interval ms,
/// lease ms, then token ids (as many as wanted).
///
/// Tokens are the host's requests in flight, crawl-wide: whatever shard a URL comes from,
/// its fetch holds one of the host's tokens, taken here first. Expired tokens (their
/// process died) are dropped; then, if the host is not paused and past its interval, up
/// to the per-host limit of them are taken, one at most when requests are spaced.
///
/// Returns {wait ms} when the host must wait, else {0, slots left free after this take,
/// token1, token2, ...}: with none left the caller need not ask again before one of its
/// own requests ends (or a while passes), which saves a per-host-limited crawl a refused
/// call per page.
pub static GRANT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}{BULK}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local paused = tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '0')
local next_at = tonumber(redis.call('HGET', KEYS[1], 'next_at') or '0')
local ready = math.max(paused, next_at)
if ready > now then return {{ready - now}} end
local interval = tonumber(ARGV[2])
local room = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[2])
local n = math.min(room, #ARGV - 3)
if interval > 0 then n = math.min(n, 1) end
local out, taken = {{0, math.max(room - n, 0)}}, {{}}
local until_ = now + tonumber(ARGV[3])
for i = 1, n do
  taken[#taken + 1] = until_
  taken[#taken + 1] = ARGV[3 + i]
  out[#out + 1] = ARGV[3 + i]
end
bulk('ZADD', KEYS[2], taken)
if n > 0 and interval > 0 then
  redis.call('HSET', KEYS[1], 'next_at', now + interval)
end
return out"
    ))
});

/// Lease URLs of one host's part in a shard, for tokens the caller holds. KEYS: queue,
/// leases, retries, seen, tries. ARGV: lease ms, most to take.
///
/// First returns expired leases (their process died) and due retries to the front of the
/// queue; then moves up to N elements from the queue into the leases, dropping any whose
/// URL was finished meanwhile (a lease that expired while its holder still worked).
///
/// Returns {reclaimed, element1, depth1, tries1, element2, ...}.
pub static POP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}{BULK}
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
bulk('LPUSH', KEYS[1], expired)
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
bulk('LPUSH', KEYS[1], due)
local out = {{#expired}}
local n = tonumber(ARGV[2])
local until_ = now + tonumber(ARGV[1])
local took = 0
while took < n do
  local want = n - took
  local els = redis.call('LPOP', KEYS[1], want)
  if not els then break end
  local hashes = {{}}
  for i, el in ipairs(els) do hashes[i] = string.sub(el, 1, 32) end
  local seen = bulk('HMGET', KEYS[4], hashes)
  local tries = bulk('HMGET', KEYS[5], hashes)
  local leased = {{}}
  for i, el in ipairs(els) do
    local v = seen[i]
    if not (v and string.sub(v, -1) == 'x') then
      leased[#leased + 1] = until_
      leased[#leased + 1] = el
      out[#out + 1] = el
      out[#out + 1] = v and string.sub(v, 1, -2) or '0'
      out[#out + 1] = tries[i] or '0'
      took = took + 1
    end
  end
  bulk('ZADD', KEYS[2], leased)
  if #els < want then break end
end
return out"
    ))
});

/// Finish a leased URL with its result. KEYS: seen, out, leases, tries, counts. ARGV: key
/// hash, queue element, key, page JSON, outlinks (`records::encode_edges`, empty for
/// none), the most entries
/// the results stream may hold (0: no limit).
///
/// The `x` letter makes the page stored once even when two processes fetched it (a lease
/// that expired while its holder was still working). Returns 1 when stored by this call,
/// 0 when it was stored before, -1 (and does nothing) when the results stream is full:
/// the caller waits for the collector and calls again.
pub static COMPLETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, -1) == 'x' then
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[4], ARGV[1])
  return 0
end
local cap = tonumber(ARGV[6])
if cap > 0 and redis.call('XLEN', KEYS[2]) >= cap then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], (v and string.sub(v, 1, -2) or '0') .. 'x')
redis.call('XADD', KEYS[2], '*', 't', 'p', 'k', ARGV[3], 'r', ARGV[4], '{EDGES_FIELD}', ARGV[5])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('HINCRBY', KEYS[5], 'stored', 1)
return 1"
    ))
});

/// Try a URL again later. KEYS: seen, leases, retries, tries. ARGV: key hash, queue
/// element, delay ms, attempts made. Returns 0 (and does nothing) when the page was stored
/// meanwhile.
pub static RETRY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
redis.call('ZREM', KEYS[2], ARGV[2])
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, -1) == 'x' then return 0 end
redis.call('HSET', KEYS[4], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])
return 1"
    ))
});

/// Give leased URLs back unfetched (a stopping process). KEYS: leases, queue, seen.
/// ARGV: queue elements.
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "local n = 0
for i = 1, #ARGV do
  local el = ARGV[i]
  if redis.call('ZREM', KEYS[1], el) == 1 then
    local v = redis.call('HGET', KEYS[3], string.sub(el, 1, 32))
    if not (v and string.sub(v, -1) == 'x') then
      redis.call('LPUSH', KEYS[2], el)
      n = n + 1
    end
  end
end
return n",
    )
});

/// Extend leases (or tokens) this process still holds. KEYS: leases (or tokens). ARGV:
/// lease ms, members. One that already expired (and may be someone else's now) is not
/// touched.
pub static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
local n = 0
for i = 2, #ARGV do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) > now then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i])
    n = n + 1
  end
end
return n"
    ))
});

/// Push a time field of a host's state to at least now + ms, never earlier: a 429/503
/// pause (`paused_until`, for every process; also sent to the results stream, so the
/// SQLite file keeps it as a local crawl does). KEYS: state, out. ARGV: field, ms.
pub static NOT_BEFORE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
local at = now + tonumber(ARGV[2])
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if at > cur then
  redis.call('HSET', KEYS[1], ARGV[1], at)
  if ARGV[1] == 'paused_until' then redis.call('XADD', KEYS[2], '*', 't', 'h', 'until', at) end
end
return at"
    ))
});

/// What a live hosts table shows of a host, crawl-wide: its request slots taken now (by
/// every process) and the end of its pause, 0 when not paused. KEYS: state, tokens.
pub static HOST_NOW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
local taken = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
local paused = tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '0')
if paused <= now then paused = 0 end
return {{taken, paused}}"
    ))
});

/// Work left on a host's part in a shard: queued + leased + waiting to retry. KEYS: queue,
/// leases, retries.
pub static LEFT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "return redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3])",
    )
});

/// Record a leased URL as not fetched (robots.txt forbids it) and end its lease. KEYS:
/// seen, out, leases, tries, counts. ARGV: key hash, queue element, key, reason. A page
/// stored meanwhile (a lease that expired while its holder worked) is left as it is.
pub static SKIP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('HDEL', KEYS[4], ARGV[1])
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, -1) == 'x' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], (v and string.sub(v, 1, -2) or '0') .. 'x')
redis.call('XADD', KEYS[2], '*', 't', 's', 'k', ARGV[3], 'why', ARGV[4])
redis.call('HINCRBY', KEYS[5], 'skipped', 1)
return 1",
    )
});

/// Book a request to a host made outside the queues (a sitemap read), keeping its spacing
/// and pauses: it may start once the host's next start and pause have passed, and the next
/// start moves one interval past it. KEYS: state. ARGV: interval ms. Returns the ms to
/// wait.
pub static BOOK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
local paused = tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '0')
local next_at = tonumber(redis.call('HGET', KEYS[1], 'next_at') or '0')
local start = math.max(now, paused, next_at)
local interval = tonumber(ARGV[1])
if interval > 0 then redis.call('HSET', KEYS[1], 'next_at', start + interval) end
return start - now"
    ))
});

/// A request to a host is about to leave: it leaves no sooner than the host's spacing after
/// the previous one left, whatever process sent that (`started_at`), and the next grant
/// waits for the spacing after it (`next_at`). Spacing is booked when a slot is granted,
/// but a lease can wait in a process before its fetch (a busy or stalled runtime, the pop
/// and hand-over after the grant) while the next grant comes due: without this step the
/// two requests could leave together. KEYS: state. ARGV: interval ms. Returns how long to
/// wait before sending, in ms.
pub static STARTED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
local interval = tonumber(ARGV[1])
local got = redis.call('HMGET', KEYS[1], 'started_at', 'next_at')
local at = now
if got[1] then at = math.max(now, tonumber(got[1]) + interval) end
local next_at = math.max(tonumber(got[2] or '0'), at + interval)
redis.call('HSET', KEYS[1], 'started_at', at, 'next_at', next_at)
return at - now"
    ))
});

/// Take one of a host's request slots for a request outside the queues (a sitemap read):
/// a token of its own, counted with the fetches' tokens against the per-host limit,
/// dropped when it expires. KEYS: tokens. ARGV: the token, per-host limit, lease ms.
/// Returns 1 when taken.
pub static OCCUPY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{NOW}
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1"
    ))
});

/// Make URLs known from a results file (`reuse`), never over a URL already known: the
/// first `seen` value still decides. KEYS: seen, queue, counts. ARGV per URL: key hash,
/// `seen` value, then `s` (stored), `k` (skipped) or `q` and the queue element (to fetch).
pub static KNOW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "local stored, skipped = 0, 0
for i = 1, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    local what = ARGV[i + 2]
    if what == 's' then stored = stored + 1
    elseif what == 'k' then skipped = skipped + 1
    else redis.call('RPUSH', KEYS[2], string.sub(what, 2)) end
  end
end
if stored > 0 then redis.call('HINCRBY', KEYS[3], 'stored', stored) end
if skipped > 0 then redis.call('HINCRBY', KEYS[3], 'skipped', skipped) end
return 0",
    )
});
