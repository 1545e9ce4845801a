-- gossamer frontier v2: give slots of one host back to the cluster-wide limiter (url mode).
-- KEYS[1] slots (ZSET holder -> deadline), KEYS[2] pace (HASH next, delay)
-- ARGV[1] seconds from now until the host's next start as the caller's politeness policy
-- sees it (spaced from the request's real start, a Retry-After included), '' when no request
-- told anything; ARGV[2] the caller's delay for the host, '' to keep the reported one;
-- ARGV[3..] holder names.
-- The next start only moves later: another worker's request may have pushed it further.
-- Returns how many of the holders still held a slot (the others had expired).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local held = redis.call('ZREM', KEYS[1], unpack(ARGV, 3))
if ARGV[1] ~= '' then
  local next_start = tonumber(redis.call('HGET', KEYS[2], 'next') or '0')
  next_start = math.max(next_start, now + tonumber(ARGV[1]))
  redis.call('HSET', KEYS[2], 'next', string.format('%.6f', next_start))
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], 'delay', ARGV[2])
end
if redis.call('PTTL', KEYS[2]) == -1 then
  -- The pace had expired (the host idle an hour) and is new: it goes again when idle.
  redis.call('PEXPIRE', KEYS[2], 3600000)
end
return held
