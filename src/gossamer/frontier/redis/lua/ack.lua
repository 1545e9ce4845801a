-- gossamer frontier v2: finish a claimed entry.
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] counts (HASH)
-- ARGV[1] claim token
-- Returns 1 when the claim was still held (the URL is finished now), 0 when it had been
-- reclaimed already (the URL is queued again; nothing is counted twice).
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'claimed', -1)
redis.call('HINCRBY', KEYS[3], 'finished', 1)
return 1
