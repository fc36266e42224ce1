-- Fixed window. KEYS[1]: a hash holding the current window's start in µs (w) and the
-- units passed in it (c); a window that has ended counts 0. The one key the script names
-- is the one it reads and writes, so that a cluster resharding its slot routes the call
-- where the count is (a key per window, named in the script, was invisible to ASK).
-- ARGV: now, N, P, cost, ttl_ms.
-- Returns {allowed, remaining, retry_after_us, reset_after_us}.
local now = now_us(ARGV[1])
local n, p = tonumber(ARGV[2]), tonumber(ARGV[3])
local cost, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])

local _, into = divmod(now, p)
local start = now - into
local left = start + p - now
local state = redis.call('HMGET', KEYS[1], 'w', 'c')
local count = 0
if tonumber(state[1]) == start then
  count = tonumber(state[2])
end
local allowed = count + cost <= n
if allowed and charge then
  count = count + cost
  redis.call('HSET', KEYS[1], 'w', int(start), 'c', int(count))
  -- The count lives to the window's end: the next window starts from 0 anyway.
  expire(KEYS[1], ceil_div(left, 1000), ttl)
end
local retry = 0
if not allowed then
  retry = left
end
return {allowed and 1 or 0, n - count, retry, left}
