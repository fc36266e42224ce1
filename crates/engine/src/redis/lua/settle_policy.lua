-- A live request in a policy settled after the response, all or nothing in one call:
-- KEYS[i] is layer i's key; ARGV[1] the op, `decide` or `settle`; ARGV[2] the time
-- (empty: the server's clock); ARGV[3] the time to live; then 8 values a layer: kind, N,
-- P, b, the units asked on arrival, the units taken on arrival, the settlement's op
-- (`give`, `take` or `none`) and its units.
-- `decide` asks every layer; only if all admit does it take what each takes on arrival (a
-- cap one more in flight). It returns each layer's answer, 1 or 0, in order. `settle`
-- settles every layer as told (a cap one fewer in flight), and returns 1.
local op, now, ttl = ARGV[1], now_us(ARGV[2]), tonumber(ARGV[3])
local function layer(i)
  local a = 3 + (i - 1) * 8
  return ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]),
    tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 7], tonumber(ARGV[a + 8])
end
if op == 'decide' then
  local answers, all = {}, true
  for i = 1, #KEYS do
    local kind, n, p, b, asked = layer(i)
    local answer = settle_one(KEYS[i], 'check', kind, now, n, p, b, asked, ttl)
    if type(answer) == 'table' then
      return answer
    end
    answers[i] = answer
    all = all and answer == 1
  end
  if all then
    for i = 1, #KEYS do
      local kind, n, p, b, _, taken = layer(i)
      if kind == 'cap' or taken > 0 then
        local done = settle_one(KEYS[i], 'take', kind, now, n, p, b, taken, ttl)
        if type(done) == 'table' then
          return done
        end
      end
    end
  end
  return answers
end
for i = 1, #KEYS do
  local kind, n, p, b, _, _, how, units = layer(i)
  if kind == 'cap' then
    how = 'give'
  end
  if how ~= 'none' then
    local done = settle_one(KEYS[i], how, kind, now, n, p, b, units, ttl)
    if type(done) == 'table' then
      return done
    end
  end
end
return 1
