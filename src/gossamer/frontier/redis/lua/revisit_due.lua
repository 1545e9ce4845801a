-- gossamer frontier v2: queue a partition's revisits that are due (``--recrawl``).
-- KEYS[1] due (ZSET), KEYS[2] revisits (HASH), KEYS[3] queue (LIST), KEYS[4] counts (HASH),
-- KEYS[5] ranked (ZSET), KEYS[6] ranks (HASH), KEYS[7] hosts (HASH)
-- ARGV[1] wall-clock now, ARGV[2] most revisits to queue
-- Returns {revisits queued, revisits still due now, the earliest due time left or ''}.
local wrong = wrong_type(KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'list', KEYS[4], 'hash',
  KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash')
if wrong then
  return wrong
end
local fps = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local n = 0
for _, fp in ipairs(fps) do
  n = n + queue_revisit(KEYS, fp, revisit_state(KEYS[2], fp))
end
if n > 0 then
  redis.call('HINCRBY', KEYS[4], 'queued', n)
end
local left = redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {n, left, first[2] or ''}
