-- Settling after the response: one call on one key's limiter, of a token bucket, GCRA or a
-- fixed window, kept as their scripts keep them. KEYS[1]: the limiter's hash.
-- ARGV: op, kind, now (µs), then the kind's values, then ttl_ms:
--   token-bucket: N, P, b·P (the capacity), units·P
--   gcra:         N, I as (iq, ir), units·I as (uq, ur), b·I as (bq, br)
--   fixed-window: N, P, units
-- op is one of
--   check: whether the limiter admits the units now, changing nothing (1 or 0);
--   take:  takes the units now, whatever it holds, into debt if it must;
--   give:  gives the units back now, never past what it holds at rest;
--   owed:  how many units it owes now, rounded up.
-- Every value stays a whole number below 2^53, exact in a double; a state that would leave
-- that range is an error, not a rounding.
local op, kind = ARGV[1], ARGV[2]
local now = tonumber(ARGV[3])
local LIMIT = 4503599627370496 -- 2^52

local function exact(x)
  if x > LIMIT or x < -LIMIT then
    return redis.error_reply('a settled limiter left the exact range of Redis numbers (2^52)')
  end
  return nil
end

if kind == 'token-bucket' then
  local n, p = tonumber(ARGV[4]), tonumber(ARGV[5])
  local cap, units = tonumber(ARGV[6]), tonumber(ARGV[7])
  local ttl = tonumber(ARGV[8])
  local level, last = bucket_at(KEYS[1], now, n, cap)
  if op == 'check' then
    return level >= units and 1 or 0
  elseif op == 'owed' then
    if level >= 0 then
      return 0
    end
    return ceil_div(-level, p)
  elseif op == 'take' then
    level = level - units
  elseif op == 'give' then
    level = math.min(level + units, cap)
  end
  local wrong = exact(level)
  if wrong then
    return wrong
  end
  redis.call('HSET', KEYS[1], 'level', int(level), 'last', int(last))
  expire(KEYS[1], 0, ttl)
  return 1
elseif kind == 'gcra' then
  local n = tonumber(ARGV[4])
  local iq, ir = tonumber(ARGV[5]), tonumber(ARGV[6])
  local uq, ur = tonumber(ARGV[7]), tonumber(ARGV[8])
  local bq, br = tonumber(ARGV[9]), tonumber(ARGV[10])
  local ttl = tonumber(ARGV[11])
  local q, r = tat_at(KEYS[1], now)
  if op == 'check' then
    local nq, nr = q + uq, r + ur
    if nr >= n then
      nq, nr = nq + 1, nr - n
    end
    local dq = nq - now
    return (dq < bq or (dq == bq and nr <= br)) and 1 or 0
  elseif op == 'owed' then
    -- Past now + b·I, each interval is a unit owed.
    local beyond = (q - now - bq) * n + (r - br)
    if beyond <= 0 then
      return 0
    end
    return ceil_div(beyond, iq * n + ir)
  elseif op == 'take' then
    q, r = q + uq, r + ur
    if r >= n then
      q, r = q + 1, r - n
    end
  elseif op == 'give' then
    -- Back by the units' intervals, never before now: at rest, tat is now.
    q, r = q - uq, r - ur
    if r < 0 then
      q, r = q - 1, r + n
    end
    if q < now or (q == now and r == 0) then
      q, r = now, 0
    end
  end
  local wrong = exact(q)
  if wrong then
    return wrong
  end
  redis.call('HSET', KEYS[1], 'q', int(q), 'r', int(r))
  expire(KEYS[1], 0, ttl)
  return 1
elseif kind == 'fixed-window' then
  local n, p = tonumber(ARGV[4]), tonumber(ARGV[5])
  local units, ttl = tonumber(ARGV[6]), tonumber(ARGV[7])
  local _, into = divmod(now, p)
  local start = now - into
  local state = redis.call('HMGET', KEYS[1], 'w', 'c')
  local count = 0
  if tonumber(state[1]) == start then
    count = tonumber(state[2])
  end
  if op == 'check' then
    return count + units <= n and 1 or 0
  elseif op == 'owed' then
    return math.max(0, count - n)
  elseif op == 'take' then
    count = count + units
  elseif op == 'give' then
    count = math.max(0, count - units)
  end
  local wrong = exact(count)
  if wrong then
    return wrong
  end
  redis.call('HSET', KEYS[1], 'w', int(start), 'c', int(count))
  expire(KEYS[1], 0, ttl)
  return 1
end
return redis.error_reply('settle: no limiter ' .. tostring(kind))
