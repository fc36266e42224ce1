-- Sliding log. KEYS[1]: a sorted set of passed events, scored by their time in µs.
-- ARGV: now, N, P, cost, ttl_ms, a member name unique to this call.
-- Returns {allowed, remaining, retry_after_us, reset_after_us}.
local now = now_us(ARGV[1])
local n, p = tonumber(ARGV[2]), tonumber(ARGV[3])
local cost, ttl, member = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]

-- An event exactly one period old has left (t − P, t]: the log's events after `gone`.
local gone = int(now - p)
local count = redis.call('ZCOUNT', KEYS[1], '(' .. gone, '+inf')
local allowed = count + cost <= n
if allowed and charge then
  for i = 1, cost do
    redis.call('ZADD', KEYS[1], int(now), member .. ':' .. i)
  end
  count = count + cost
end
-- The events that left are removed only if some stay: a log emptied is a key gone, and
-- in a slot being resharded Redis Cluster refuses any later command on a key its node no
-- longer holds ("non local key"), in this script or in the rest of a batch. Kept, they
-- are never counted, and they expire with the key.
if count > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', gone)
end
local retry = 0
if not allowed and count > 0 then
  -- Enough of the oldest must leave: the (count + cost − N)-th oldest.
  local oldest = redis.call('ZRANGE', KEYS[1], count + cost - n - 1, count + cost - n - 1, 'WITHSCORES')
  retry = tonumber(oldest[2]) + p - now
end
local reset = 0
if count > 0 then
  local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  reset = tonumber(newest[2]) + p - now
end
expire(KEYS[1], ceil_div(p, 1000), ttl)
return {allowed and 1 or 0, n - count, retry, reset}
