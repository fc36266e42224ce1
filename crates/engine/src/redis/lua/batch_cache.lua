-- Put before the shared helpers in a batch script: a `redis` whose hash commands and
-- PEXPIRE work on a copy of each key kept in this run, so that a key used by many calls of
-- a batch is read from Redis once and written once, by `flush` at the end. The calls see
-- what they would have seen calling Redis: each hash as the calls before left it. Other
-- commands (the sliding log's sorted sets) go to Redis as they are.
local server = redis
local hashes, order, lives = {}, {}, {}

-- Returns a key's copy: {fields as read, fields set since}, read whole on first use.
local function copy(key)
  local kept = hashes[key]
  if kept == nil then
    local read, all = {}, server.call('HGETALL', key)
    for i = 1, #all, 2 do
      read[all[i]] = all[i + 1]
    end
    kept = {read, {}}
    hashes[key] = kept
    order[#order + 1] = key
  end
  return kept
end

-- Returns field `field` of a key's copy: as set, else as read, else false (as Redis
-- answers a missing field).
local function field(kept, field)
  local value = kept[2][field]
  if value == nil then
    value = kept[1][field]
  end
  if value == nil then
    return false
  end
  return value
end

-- The limiters ask for two or four fields and set two: written out rather than looped
-- over, which is measured quicker in Redis's Lua.
-- HMGET's answers, made once: a limiter reads its answer before it asks again. (Each table
-- made in Redis's Lua is measured to cost about as much as a limiter's arithmetic.)
local two, four = {}, {}
local redis = {
  -- Fixed parameters rather than `...`: quicker in Lua 5.1. No limiter passes more than
  -- four arguments after the key, and `e` says when one does.
  call = function(command, key, a, b, c, d, e)
    if command == 'HMGET' and e == nil then
      local kept = copy(key)
      if c == nil then
        two[1], two[2] = field(kept, a), field(kept, b)
        return two
      end
      four[1], four[2], four[3], four[4] = field(kept, a), field(kept, b), field(kept, c), field(kept, d)
      return four
    elseif command == 'HSET' and d ~= nil and e == nil then
      local set = copy(key)[2]
      set[a], set[c] = b, d
      return 0
    elseif command == 'HMGET' or command == 'HSET' then
      -- Sent to Redis, it would bypass the copy: a limiter's script changed shape.
      return server.error_reply('ratelimit batch: ' .. command .. ' of another shape')
    elseif command == 'PEXPIRE' and b == nil then
      if lives[key] == nil then
        order[#order + 1] = key
      end
      lives[key] = a
      return 1
    end
    -- The sliding log's sorted sets, as they are, with the arguments given.
    if e ~= nil then
      return server.error_reply('ratelimit batch: ' .. command .. ' with more than 5 arguments')
    elseif a == nil then
      return server.call(command, key)
    elseif b == nil then
      return server.call(command, key, a)
    elseif c == nil then
      return server.call(command, key, a, b)
    elseif d == nil then
      return server.call(command, key, a, b, c)
    end
    return server.call(command, key, a, b, c, d)
  end,
}

-- Writes each key's fields set, then its last time to live, as the calls left them.
local function flush()
  local done = {}
  for _, key in ipairs(order) do
    if not done[key] then
      done[key] = true
      local kept = hashes[key]
      if kept ~= nil then
        local fields = {}
        for field, value in pairs(kept[2]) do
          fields[#fields + 1] = field
          -- A whole number kept as a number (see `int` in the batch script): as text.
          if type(value) == 'number' then
            value = string.format('%.0f', value)
          end
          fields[#fields + 1] = value
        end
        if #fields > 0 then
          server.call('HSET', key, unpack(fields))
        end
      end
      if lives[key] ~= nil then
        server.call('PEXPIRE', key, lives[key])
      end
    end
  end
end
