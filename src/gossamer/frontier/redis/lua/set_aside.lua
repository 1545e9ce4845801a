-- gossamer frontier v2: drop a claim whose entry does not decode (the worker has stored a copy
-- in the job's bad entries first); it is neither finished nor queued again.
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] counts (HASH)
-- ARGV[1] claim token
-- Returns 1 when the claim was still held, 0 when it had been reclaimed already.
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'claimed', -1)
return 1
