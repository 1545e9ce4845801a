-- gossamer frontier v2: the pages a spare revisit (``--revisit-spare``) of a partition's idle
-- host is picked from: a window of the partition's waiting revisits with their states, none
-- while the partition has entries queued or revisits due (those go first).
-- KEYS[1] due (ZSET), KEYS[2] revisits (HASH), KEYS[3] counts (HASH)
-- ARGV[1] wall-clock now, ARGV[2] most pages, ARGV[3] where the window starts, in [0, 1)
-- Returns {fp, state, fp, state, ...} (pages whose state is missing left out).
if (tonumber(redis.call('HGET', KEYS[3], 'queued')) or 0) > 0 then
  return {}
end
if redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1]) > 0 then
  return {}
end
local most = tonumber(ARGV[2])
local card = redis.call('ZCARD', KEYS[1])
local start = math.floor((tonumber(ARGV[3]) or 0) * math.max(card - most + 1, 0))
start = math.max(math.min(start, card - most), 0)
local fps = redis.call('ZRANGE', KEYS[1], start, start + most - 1)
if #fps == 0 then
  return {}
end
local states = redis.call('HMGET', KEYS[2], unpack(fps))
local out = {}
for i, fp in ipairs(fps) do
  if states[i] then
    out[#out + 1] = fp
    out[#out + 1] = states[i]
  end
end
return out
