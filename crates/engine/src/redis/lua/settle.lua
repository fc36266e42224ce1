-- Settling after the response: one call on one key's limiter, of a token bucket, GCRA, a
-- fixed window (each kept as its script keeps it), a sliding-window counter or a sliding
-- log, or on a cap's count in flight.
-- settle_one(key, op, kind, now, n, p, b, units, ttl): key is the limiter's hash (a cap's
-- counter); the rate is N per P µs with a burst of b; op is one of
--   check: whether the limiter admits the units now, changing nothing (1 or 0);
--   take:  takes the units now, whatever it holds, into debt if it must;
--   give:  gives the units back now, never past what it holds at rest;
--   owed:  how many units it owes now, rounded up.
-- A cap (kind 'cap', at most b in flight) checks whether one more fits, takes one and
-- gives one back, never below 0.
-- Every value stays a whole number below 2^53, exact in a double (ratelimit checks that
-- b·P and units·P stay below 2^52); a state that would leave that range is an error, not
-- a rounding.
local LIMIT = 4503599627370496 -- 2^52

-- The error of a value past the exact range, if it is.
local function inexact(x)
  if x > LIMIT or x < -LIMIT then
    return redis.error_reply('a settled limiter left the exact range of Redis numbers (2^52)')
  end
  return nil
end

local function settle_one(key, op, kind, now, n, p, b, units, ttl)
  if kind == 'cap' then
    local count = tonumber(redis.call('GET', key)) or 0
    if op == 'check' then
      return count < b and 1 or 0
    elseif op == 'take' then
      count = count + 1
    elseif op == 'give' then
      count = math.max(0, count - 1)
    else
      return 0
    end
    redis.call('SET', key, int(count))
    expire(key, 0, ttl)
    return 1
  end
  if kind == 'token-bucket' then
    -- The level, in units of 1/P token; a token is P units, and N come each µs.
    local cap, cost = b * p, units * p
    local level, last = bucket_at(key, now, n, cap)
    if op == 'check' then
      return level >= cost and 1 or 0
    elseif op == 'owed' then
      if level >= 0 then
        return 0
      end
      return ceil_div(-level, p)
    elseif op == 'take' then
      level = level - cost
    elseif op == 'give' then
      level = math.min(level + cost, cap)
    end
    local wrong = inexact(level)
    if wrong then
      return wrong
    end
    redis.call('HSET', key, 'level', int(level), 'last', int(last))
  elseif kind == 'gcra' then
    -- tat is q whole µs plus r/N µs; I = P/N µs; units·I and b·I split alike.
    local iq, ir = divmod(p, n)
    local uq, ur = divmod(units * p, n)
    local bq, br = divmod(b * p, n)
    local q, r = tat_at(key, now)
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
    local wrong = inexact(q)
    if wrong then
      return wrong
    end
    redis.call('HSET', key, 'q', int(q), 'r', int(r))
  elseif kind == 'fixed-window' then
    local _, into = divmod(now, p)
    local start = now - into
    local state = redis.call('HMGET', key, 'w', 'c')
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
    local wrong = inexact(count)
    if wrong then
      return wrong
    end
    redis.call('HSET', key, 'w', int(start), 'c', int(count))
  elseif kind == 'sliding-counter' then
    -- This window's start and count, and the one before's count.
    local window, elapsed = divmod(now, p)
    local start = now - elapsed
    local state = redis.call('HMGET', key, 'w', 'c', 'pc')
    local at, cur, prev = tonumber(state[1]), 0, 0
    if at == start then
      cur, prev = tonumber(state[2]), tonumber(state[3])
    elseif at == start - p then
      prev = tonumber(state[2])
    end
    if op == 'check' then
      -- prev·(P − elapsed)/P + cur + units − 1 < N, multiplied through by P.
      return prev * (p - elapsed) + (cur + units - 1) * p < n * p and 1 or 0
    elseif op ~= 'take' then
      -- It gives nothing back, and owes nothing: a count past N is only counted.
      return 0
    end
    cur = cur + units
    local wrong = inexact(cur * p)
    if wrong then
      return wrong
    end
    redis.call('HSET', key, 'w', int(start), 'c', int(cur), 'pc', int(prev))
  elseif kind == 'sliding-log' then
    -- Each charge a member `time:seq:units` scored by its time; one a full period old is
    -- gone, as (t − P, t] keeps it.
    redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now - p))
    local used = 0
    for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      used = used + tonumber(string.match(member, ':(%d+)$'))
    end
    if op == 'check' then
      return used + units <= n and 1 or 0
    elseif op ~= 'take' then
      return 0
    end
    -- A charge of nothing takes no room in the log.
    if units > 0 then
      local wrong = inexact((used + units) * p)
      if wrong then
        return wrong
      end
      local seq = redis.call('ZCARD', key)
      local member
      repeat
        seq = seq + 1
        member = int(now) .. ':' .. seq .. ':' .. int(units)
      until not redis.call('ZSCORE', key, member)
      redis.call('ZADD', key, int(now), member)
    end
  else
    return redis.error_reply('settle: no limiter ' .. tostring(kind))
  end
  expire(key, 0, ttl)
  return 1
end
