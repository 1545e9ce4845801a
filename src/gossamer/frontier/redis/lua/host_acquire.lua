-- gossamer frontier v2: take slots of one host from the cluster-wide limiter (url mode).
-- KEYS[1] slots (ZSET holder -> deadline), KEYS[2] pace (HASH next, delay)
-- ARGV[1] per_host, ARGV[2] the caller's delay for the host (seconds), ARGV[3] seconds a slot
-- lasts unless released (a dead worker's slots expire), ARGV[4] seconds to wait before asking
-- again while the host is full, ARGV[5..] holder names, one per slot wanted.
-- Times are the Redis server's (TIME), so the workers' clocks need not agree.
-- A host with a delay (the caller's, or the last one a worker reported) or whose delay nobody
-- has reported yet gets one slot at a time; its next start is pushed a delay ahead.
-- Returns {slots granted (to the first holders), milliseconds until a slot may be free}.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local reported = redis.call('HGET', KEYS[2], 'delay')
local delay = tonumber(ARGV[2])
local limit = tonumber(ARGV[1])
if reported then
  delay = math.max(delay, tonumber(reported))
end
if delay > 0 or not reported then
  limit = 1
end
local next_start = tonumber(redis.call('HGET', KEYS[2], 'next') or '0')
local active = redis.call('ZCARD', KEYS[1])
local granted = 0
if now >= next_start then
  granted = math.max(0, math.min(#ARGV - 4, limit - active))
end
local ttl = tonumber(ARGV[3])
for i = 1, granted do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[4 + i])
end
if granted > 0 then
  next_start = math.max(next_start, now) + delay
  redis.call('HSET', KEYS[2], 'next', string.format('%.6f', next_start))
  active = active + granted
end
local wait = math.max(next_start - now, 0)
if active >= limit then
  wait = math.max(wait, tonumber(ARGV[4]))
end
-- An idle host's keys go, a while after its last slot could have ended.
local keep = math.ceil((ttl + math.max(next_start - now, 0) + 3600) * 1000)
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('PEXPIRE', KEYS[2], keep)
return {granted, math.ceil(wait * 1000)}
