-- gossamer frontier v1: a partition's ranked queue, shared by the scripts that queue entries
-- (prepended to them by scripts.py). A partition queues in its FIFO list (queue) until an entry
-- with a priority other than 0 arrives; then, once, the list moves to the ranked set and every
-- later entry of the partition goes there: ranked (ZSET, score -priority, member
-- "<order>|<entry>", <order> 16 characters: '1' and an arrival counter for the back, '0' and a
-- falling counter for the front of a priority) and ranks (HASH fp -> member).
local function fp_of(entry)
  return string.match(entry, '^([^|]*)|')
end
local function priority_of(entry)
  local sixth = string.match(entry, '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|([^|]*)')
  if sixth == nil or string.sub(sixth, 1, 4) == 'http' then
    return 0
  end
  local p = tonumber(sixth)
  if p == nil or p ~= p or p == math.huge or p == -math.huge then
    return 0 -- a malformed entry: set aside when it is claimed
  end
  return p
end
local function order_key(counts, front)
  if front then
    return string.format('0%015d', 999999999999999 - redis.call('HINCRBY', counts, 'front', 1))
  end
  return string.format('1%015d', redis.call('HINCRBY', counts, 'order', 1))
end
local function rank(ranked, ranks, counts, entry, front)
  local member = order_key(counts, front) .. '|' .. entry
  redis.call('ZADD', ranked, -priority_of(entry), member)
  local fp = fp_of(entry)
  if fp then
    redis.call('HSET', ranks, fp, member)
  end
end
local function to_ranked(queue, ranked, ranks, counts)
  if redis.call('HSETNX', counts, 'ranked', 1) == 0 then
    return
  end
  for _, entry in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    rank(ranked, ranks, counts, entry, false)
  end
  redis.call('DEL', queue)
end
local function enqueue(queue, ranked, ranks, counts, entry, front)
  if priority_of(entry) ~= 0 then
    to_ranked(queue, ranked, ranks, counts)
  end
  if redis.call('HEXISTS', counts, 'ranked') == 1 then
    rank(ranked, ranks, counts, entry, front)
  elseif front then
    redis.call('LPUSH', queue, entry)
  else
    redis.call('RPUSH', queue, entry)
  end
end
