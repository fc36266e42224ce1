-- Fixed window. KEYS[1]: the counters' base name; each epoch-aligned window counts in
-- KEYS[1]:<window start in µs>, which shares KEYS[1]'s hash tag.
-- ARGV: now, N, P, cost, ttl_ms.
-- Returns {allowed, remaining, retry_after_us, reset_after_us}.
local now = now_us(ARGV[1])
local n, p = tonumber(ARGV[2]), tonumber(ARGV[3])
local cost, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])

local _, into = divmod(now, p)
local start = now - into
local key = KEYS[1] .. ':' .. int(start)
local left = start + p - now
local count = tonumber(redis.call('GET', key) or '0')
local allowed = count + cost <= n
if allowed and charge then
  -- The counter gets its time to live in the same script that creates it.
  count = redis.call('INCRBY', key, cost)
  if ttl > 0 then
    redis.call('PEXPIRE', key, ttl, 'NX')
  else
    redis.call('PEXPIRE', key, math.max(1, ceil_div(left, 1000)), 'NX')
  end
end
local retry = 0
if not allowed then
  retry = left
end
return {allowed and 1 or 0, n - count, retry, left}
