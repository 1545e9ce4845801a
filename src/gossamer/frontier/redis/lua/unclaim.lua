-- gossamer frontier v2: give held claims back to the front of their partition's queue.
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] queue (LIST), KEYS[4] counts (HASH),
-- KEYS[5] ranked (ZSET), KEYS[6] ranks (HASH), KEYS[7] hosts (HASH); a ranked partition: the
-- front of its priority.
-- ARGV: token1, entry1, token2, entry2, ... in queue order (entry1 ends up first).
-- Claims no longer held (reclaimed by another worker) are skipped: their entry is queued
-- already. Returns how many entries were given back.
local wrong = wrong_type(KEYS[1], 'hash', KEYS[2], 'zset', KEYS[3], 'list', KEYS[4], 'hash',
  KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash')
if wrong then
  return wrong
end
local n = 0
for i = #ARGV - 1, 1, -2 do
  if redis.call('HDEL', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZREM', KEYS[2], ARGV[i])
    enqueue(KEYS[3], KEYS[5], KEYS[6], KEYS[4], pack(KEYS[7], KEYS[4], ARGV[i + 1]), true)
    n = n + 1
  end
end
if n > 0 then
  redis.call('HINCRBY', KEYS[4], 'claimed', -n)
  redis.call('HINCRBY', KEYS[4], 'queued', n)
end
return n
