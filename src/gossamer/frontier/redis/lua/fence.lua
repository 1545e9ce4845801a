-- gossamer frontier v2: hold (or lift) one worker's fence on a partition it gave away.
-- KEYS[1] fence (HASH holder -> "until:sequence", until in Redis-clock ms)
-- ARGV[1] holder (the worker that gave the partition away), ARGV[2] milliseconds from now
-- (0 or less: lift this holder's fence), ARGV[3] the holder's sequence number of this call,
-- ARGV[4] milliseconds the key is kept at least (so a late call is still known as late).
-- A worker that drops a partition while it still has requests to its hosts in flight fences
-- it until they end plus the hosts' delays, so the new owner never overlaps them. Calls of one
-- holder may reach Redis out of order (two connections, a retry): the higher sequence wins.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old and tonumber(string.match(old, ':(%d+)$')) >= tonumber(ARGV[3]) then
  return 0
end
local ms = tonumber(ARGV[2])
local until_ms = 0
if ms > 0 then
  local t = redis.call('TIME')
  until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ms
end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d:%d', until_ms, tonumber(ARGV[3])))
local keep = math.max(ms, tonumber(ARGV[4]))
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
return 1
