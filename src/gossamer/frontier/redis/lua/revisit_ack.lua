-- gossamer frontier v2: finish a claimed entry (finish_claim: _finish.lua) and store its
-- page's revisit state.
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] counts (HASH), KEYS[4] revisits
-- (HASH), KEYS[5] due (ZSET)
-- ARGV[1] claim token, ARGV[2] fingerprint, ARGV[3] packed state ('' : no longer revisited),
-- ARGV[4] wall-clock due time ('' : none)
-- Returns 1 when the claim was still held (the state is stored), 0 when it had been reclaimed
-- already (the URL is queued again and judged by its next fetch: nothing is stored).
local wrong = wrong_type(KEYS[2], 'zset', KEYS[3], 'hash', KEYS[4], 'hash', KEYS[5], 'zset')
if wrong then -- checked before any write: the claim stays, the partition is set aside
  return wrong
end
if not finish_claim(KEYS[1], KEYS[2], KEYS[3], ARGV[1]) then
  return 0
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[4], ARGV[2])
  redis.call('ZREM', KEYS[5], ARGV[2])
  return 1
end
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
if ARGV[4] == '' then
  redis.call('ZREM', KEYS[5], ARGV[2])
else
  redis.call('ZADD', KEYS[5], ARGV[4], ARGV[2])
end
return 1
