-- gossamer frontier v2: hold (or lift) one worker's fence on a partition it gave away, and
-- hand the partition over.
-- KEYS[1] fence (HASH holder -> "until:sequence", until in Redis-clock ms), KEYS[2] holder
-- (STRING "worker:version", see claim.lua)
-- ARGV[1] holder (the worker that gave the partition away), ARGV[2] milliseconds from now
-- (0: lift this holder's fence; below 0: no fence, the hand-over only), ARGV[3] the holder's
-- sequence number of this call, ARGV[4] milliseconds the key is kept at least (so a late call
-- is still known as late), ARGV[5] the worker's name in holder records, ARGV[6] the version
-- it gave the partition away at.
-- A worker that drops a partition while it still has requests to its hosts in flight fences
-- it until they end plus the hosts' delays, so the new owner never overlaps them. Calls of one
-- holder may reach Redis out of order (two connections, a retry): the higher sequence wins.
-- The worker's holder record goes with its first fence call (a record of a later version, the
-- partition owned again since, stays), so the new owner claims from then on, after the fence.
local held = redis.call('GET', KEYS[2])
if held then
  local name, version = string.match(held, '^(.*):(%-?%d+)$')
  if name == ARGV[5] and #version <= 18 and tonumber(version) <= tonumber(ARGV[6]) then
    redis.call('DEL', KEYS[2])
  end
end
local ms = tonumber(ARGV[2])
if ms < 0 then
  return 1
end
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old and tonumber(string.match(old, ':(%d+)$')) >= tonumber(ARGV[3]) then
  return 0
end
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
