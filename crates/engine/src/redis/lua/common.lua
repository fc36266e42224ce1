-- Shared by every limiter script; ratelimit prepends it to each.
--
-- Each limiter's body runs as a function of (KEYS, ARGV, charge): with charge false it
-- only says whether the cost would pass, and changes nothing a later decision reads, so
-- that several limits can be asked first and then all charged, or none.
--
-- Redis runs Lua 5.1, whose numbers are doubles: integers are exact below 2^53. Every value
-- here is a whole number of microseconds, events, or units of 1/N µs, and ratelimit checks
-- before it runs that the largest stays below 2^53 (see README, "Shared limits in Redis").
-- Division is never used on its own: divmod goes through math.fmod, which is exact.

-- The time: `given` in microseconds, or the server's clock if it is empty.
local function now_us(given)
  if given ~= '' then
    return tonumber(given)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Returns a // m and a % m for m > 0, rounding toward negative infinity, exactly.
local function divmod(a, m)
  local r = math.fmod(a, m)
  if r < 0 then
    r = r + m
  end
  return (a - r) / m, r
end

-- Returns ⌈a / m⌉ for a ≥ 0, m > 0, exactly.
local function ceil_div(a, m)
  local q, r = divmod(a, m)
  if r > 0 then
    q = q + 1
  end
  return q
end

-- Writes a whole number without an exponent, for key names and scores.
local function int(x)
  return string.format('%.0f', x)
end

-- Sets a key's time to live: ARGV's fixed one when given (replays), else `ms`.
local function expire(key, ms, fixed)
  if fixed > 0 then
    ms = fixed
  end
  redis.call('PEXPIRE', key, math.max(1, ms))
end

-- A token bucket's hash brought to `now`: its level (in units of 1/P token) and when it was
-- last filled, a bucket never seen being full, refilled at n units a µs up to `cap`.
local function bucket_at(key, now, n, cap)
  local state = redis.call('HMGET', key, 'level', 'last')
  local level, last = tonumber(state[1]), tonumber(state[2])
  if level == nil then
    level, last = cap, now
  end
  if now > last then
    -- A refill past 2^53 is inexact, but then it is far past what the bucket lacks.
    local fill = n * (now - last)
    if fill >= cap - level then
      level = cap
    else
      level = level + fill
    end
    last = now
  end
  return level, last
end

-- GCRA's tat from its hash, as q whole µs plus r/N µs; a key at rest (never seen, or its
-- tat past) has it at now.
local function tat_at(key, now)
  local state = redis.call('HMGET', key, 'q', 'r')
  local q, r = tonumber(state[1]), tonumber(state[2])
  if q == nil or q < now or (q == now and r == 0) then
    q, r = now, 0
  end
  return q, r
end
