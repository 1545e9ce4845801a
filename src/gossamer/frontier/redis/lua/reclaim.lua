-- gossamer frontier v2: return expired claims (their worker died) to the queue's front.
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] queue (LIST), KEYS[4] counts (HASH),
-- KEYS[5] ranked (ZSET), KEYS[6] ranks (HASH), KEYS[7] hosts (HASH); a ranked partition: the
-- front of its priority.
-- ARGV[1] wall-clock now, ARGV[2] most claims to return in this call
-- Returns how many claims were returned.
local wrong = wrong_type(KEYS[1], 'hash', KEYS[2], 'zset', KEYS[3], 'list', KEYS[4], 'hash',
  KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash')
if wrong then
  return wrong
end
local tokens = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local n = 0
for i = #tokens, 1, -1 do
  local entry = redis.call('HGET', KEYS[1], tokens[i])
  redis.call('HDEL', KEYS[1], tokens[i])
  redis.call('ZREM', KEYS[2], tokens[i])
  if entry then
    enqueue(KEYS[3], KEYS[5], KEYS[6], KEYS[4], pack(KEYS[7], KEYS[4], entry), true)
    n = n + 1
  end
end
if n > 0 then
  redis.call('HINCRBY', KEYS[4], 'claimed', -n)
  redis.call('HINCRBY', KEYS[4], 'queued', n)
end
return n
