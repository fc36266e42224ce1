-- Sliding-window counter. KEYS[1]: a hash of two windows, each a start (w0, w1) and a count
-- of passed units (c0, c1); even windows use the first, odd the second, so the previous
-- window's count is always in the other. One key, so that a cluster resharding its slot
-- never finds it split between two nodes.
-- ARGV: now, N, P, cost, ttl_ms.
-- Returns {allowed, remaining, retry_after_us, reset_after_us}.
local now = now_us(ARGV[1])
local n, p = tonumber(ARGV[2]), tonumber(ARGV[3])
local cost, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])

local window, elapsed = divmod(now, p)
local start = now - elapsed
local _, odd = divmod(window, 2)
local cur_w, cur_c = 'w' .. odd, 'c' .. odd
local state = redis.call('HMGET', KEYS[1], 'w0', 'c0', 'w1', 'c1')
local cur = {state[1 + 2 * odd], state[2 + 2 * odd]}
local prev = {state[3 - 2 * odd], state[4 - 2 * odd]}
local c = 0
if tonumber(cur[1]) == start then
  c = tonumber(cur[2])
end
local before = 0
if tonumber(prev[1]) == start - p then
  before = tonumber(prev[2])
end
-- prev·(P − elapsed)/P + cur < N for each unit, multiplied through by P.
local weighted = before * (p - elapsed)
local allowed = weighted + (c + cost - 1) * p < n * p
if allowed and charge then
  c = c + cost
  redis.call('HSET', KEYS[1], cur_w, int(start), cur_c, int(c))
  expire(KEYS[1], ceil_div(2 * p, 1000), ttl)
end
-- Units that would pass now: the largest k with weighted + (c + k − 1)·P < N·P.
local room = n * p - weighted - c * p
local remaining = 0
if room > 0 then
  remaining = ceil_div(room, p)
end
local retry = 0
if not allowed then
  if c + cost - 1 < n then
    -- Later in this window the previous count weighs less: elapsed must pass
    -- P − (N − c − cost + 1)·P / before.
    local e, _ = divmod(p * before - (n - c - cost + 1) * p, before)
    retry = math.max(1, e + 1 - elapsed)
  else
    -- In the next window, this one's count is the previous: elapsed' > P − (N − cost + 1)·P / c.
    local e = 0
    if c > 0 then
      local q, _ = divmod(p * c - (n - cost + 1) * p, c)
      e = math.max(0, q + 1)
    end
    retry = p - elapsed + e
  end
end
return {allowed and 1 or 0, remaining, retry, 2 * p - elapsed}
