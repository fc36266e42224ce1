-- Token bucket. KEYS[1]: a hash holding the level, in units of 1/P token, and the time
-- it was last brought up to date.
-- ARGV: now, N, P, b·P (the capacity), cost·P, ttl_ms.
-- Returns {allowed, remaining, retry_after_us, reset_after_us}.
local now = now_us(ARGV[1])
local n, p = tonumber(ARGV[2]), tonumber(ARGV[3])
local cap, cost = tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])

local level, last = bucket_at(KEYS[1], now, n, cap)
local allowed = level >= cost
-- Only a charge is written: a level brought up to date and not stored is brought up to
-- the same level later, as refills to the capacity compose.
if allowed and charge then
  level = level - cost
  redis.call('HSET', KEYS[1], 'level', int(level), 'last', int(last))
end
local remaining, _ = divmod(level, p)
local retry = 0
if not allowed then
  retry = ceil_div(cost - level, n)
end
local reset = ceil_div(cap - level, n)
expire(KEYS[1], ceil_div(reset, 1000), ttl)
return {allowed and 1 or 0, remaining, retry, reset}
