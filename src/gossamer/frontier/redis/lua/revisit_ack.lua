-- gossamer frontier v2: finish a claimed entry (finish_claim: _finish.lua) and store its
-- page's revisit state.
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] counts (HASH), KEYS[4] revisits
-- (HASH), KEYS[5] due (ZSET)
-- ARGV[1] claim token, ARGV[2] fingerprint, ARGV[3] packed state ('' : no longer revisited),
-- ARGV[4] wall-clock due time ('' : none)
-- Returns 1 when the claim was still held (the state is stored), 0 when it had been reclaimed
-- already (the URL is queued again and judged by its next fetch: nothing is stored).
-- The state is written before the claim is finished: a key of the wrong type (the worker sets
-- the partition aside on the error) fails the script with the claim still held (revisits or
-- due), or with the state stored and the page due (deadlines or counts): the URL is never lost.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[4], ARGV[2])
  redis.call('ZREM', KEYS[5], ARGV[2])
else
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
  if ARGV[4] == '' then
    redis.call('ZREM', KEYS[5], ARGV[2])
  else
    redis.call('ZADD', KEYS[5], ARGV[4], ARGV[2])
  end
end
finish_claim(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
return 1
