-- Several limits at once, all or nothing: every layer is asked without charging, and only
-- if every one admits is each charged, in layer order, in this one atomic call.
-- LIMITERS[kind] is a limiter's function of (KEYS, ARGV, charge); ratelimit defines them
-- above, one for each script, and kind 0 for a layer the event's cost can never pass.
-- KEYS: every layer's keys, layer after layer.
-- ARGV: now (empty for the server's clock), the number of layers, then for each: its kind,
-- its number of keys, its number of arguments, and its arguments as its script takes them.
-- Returns {all admitted and charged, then for each layer: allowed, remaining,
-- retry_after_us, reset_after_us, wait_q, wait_r}, from the asking if any refused.
LIMITERS[0] = function()
  return {0, 0, 0, 0}
end
local now = int(now_us(ARGV[1]))
local layers = {}
local k, a = 1, 3
for l = 1, tonumber(ARGV[2]) do
  local kind, nk, na = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  a = a + 3
  local keys, argv = {}, {}
  for i = 1, nk do
    keys[i] = KEYS[k]
    k = k + 1
  end
  for i = 1, na do
    argv[i] = ARGV[a]
    a = a + 1
  end
  -- One time for every layer, even the server's clock.
  argv[1] = now
  layers[l] = {LIMITERS[kind], keys, argv}
end

local results, all = {}, true
for l, layer in ipairs(layers) do
  results[l] = layer[1](layer[2], layer[3], false)
  if results[l][1] == 0 then
    all = false
  end
end
if all then
  for l, layer in ipairs(layers) do
    results[l] = layer[1](layer[2], layer[3], true)
  end
end

local reply = {all and 1 or 0}
for _, result in ipairs(results) do
  for i = 1, 6 do
    reply[#reply + 1] = result[i] or 0
  end
end
return reply
