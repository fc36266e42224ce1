-- A batch of one limiter's calls, decided in order in this one atomic run: the same as
-- calling the limiter's script once for each, back to back, with nothing between.
-- `decide` is the limiter's function of (KEYS, ARGV, charge); ratelimit defines it above.
-- KEYS: the keys the calls use. ARGV: the batch's number, the number of sets of fixed
-- arguments S and the number in each F, then the S sets (a call's arguments after its time: the limiter's own
-- for a cost, and the time to live), then for each call the number of its key in KEYS and
-- of its set (from 1), its time, and for the sliding log its member name. The sets are
-- read as numbers once here, not in every call.
-- Returns the batch's number, so that a reply is never taken for another batch's; then,
-- for each call in order, 1 if it was allowed, else 0, and with `WAIT` (GCRA's
-- and the leaky queue's) the wait its script gives, as q and r: all a replay reads, in one
-- flat array, which is quicker to make and to read than an array a call. `flush`
-- (batch_cache.lua) writes the keys' hashes and lives at the end.
-- Sets and keys are found by their numbers as written: a string is looked up in a table
-- quicker than it is read as a number.
local count, size = tonumber(ARGV[2]), tonumber(ARGV[3])
local sets, a = {}, 4
for s = 1, count do
  local set = {}
  for i = 1, size do
    set[i] = tonumber(ARGV[a])
    a = a + 1
  end
  sets[tostring(s)] = set
end
-- `arguments(argv, a, sets)`, defined above for the limiter, writes the arguments of the
-- call at ARGV[a] into `argv` as its script takes them, and `PER` is how many ARGV a call
-- takes. The tables a call is given are made once: a limiter keeps neither.
local keys = {}
for k = 1, #KEYS do
  keys[tostring(k)] = {KEYS[k]}
end
local replies, argv = {tonumber(ARGV[1])}, {}
local n, last = 1, #ARGV
while a <= last do
  arguments(argv, a, sets)
  local reply = decide(keys[ARGV[a]], argv, true)
  replies[n + 1] = reply[1]
  n = n + 1
  if WAIT then
    replies[n + 1], replies[n + 2] = reply[5], reply[6]
    n = n + 2
  end
  a = a + PER
end
flush()
return replies
