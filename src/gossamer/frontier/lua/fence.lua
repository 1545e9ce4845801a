-- gossamer frontier v1: hold (or lift) one worker's fence on a partition it gave away.
-- KEYS[1] fence (HASH holder -> Redis-clock ms until which the new owner must not claim)
-- ARGV[1] holder (the worker that gave the partition away), ARGV[2] milliseconds from now
-- (0 or less: lift this holder's fence).
-- A worker that drops a partition while it still has requests to its hosts in flight fences
-- it until they end plus the hosts' delays, so the new owner never overlaps them.
local ms = tonumber(ARGV[2])
if ms <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now + ms)
if redis.call('PTTL', KEYS[1]) < ms then
  redis.call('PEXPIRE', KEYS[1], ms)
end
return 1
