-- GCRA. KEYS[1]: a hash holding tat as q whole µs plus r/N µs (0 ≤ r < N).
-- ARGV: now, N, I as (iq, ir), cost·I as (cq, cr), b·I as (bq, br), ttl_ms.
-- Returns {allowed, remaining, retry_after_us, reset_after_us, wait_q, wait_r}, where the
-- wait, max(tat, now) − now, is how long a leaky queue would hold the event.
local now = now_us(ARGV[1])
local n = tonumber(ARGV[2])
local iq, ir = tonumber(ARGV[3]), tonumber(ARGV[4])
local cq, cr = tonumber(ARGV[5]), tonumber(ARGV[6])
local bq, br = tonumber(ARGV[7]), tonumber(ARGV[8])
local ttl = tonumber(ARGV[9])

-- An unseen key is a full bucket: tat at or before now.
local q, r = tat_at(KEYS[1], now)
-- The event would leave the queue at max(tat, now); with its cost, tat would move to new.
local mq, mr = q, r
local nq, nr = mq + cq, mr + cr
if nr >= n then
  nq, nr = nq + 1, nr - n
end
-- Allowed iff new − now ≤ b·I.
local dq, dr = nq - now, nr
local allowed = dq < bq or (dq == bq and dr <= br)
if allowed and charge then
  q, r = nq, nr
  redis.call('HSET', KEYS[1], 'q', int(q), 'r', int(r))
end
-- In units of 1/N µs: how far tat is ahead of now, and b·I.
local ahead = (q - now) * n + r
local full = bq * n + br
local period = iq * n + ir
local remaining, _ = divmod(full - ahead, period)
local retry = 0
if not allowed then
  -- It would pass once now reaches tat + cost·I − b·I.
  retry = ceil_div(ahead + cq * n + cr - full, n)
end
local reset = ceil_div(ahead, n)
expire(KEYS[1], ceil_div(reset, 1000), ttl)
return {allowed and 1 or 0, remaining, retry, reset, mq - now, mr}
