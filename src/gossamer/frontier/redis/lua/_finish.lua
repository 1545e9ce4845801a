-- gossamer frontier v2: a claimed entry finished; shared by the scripts that ack (prepended
-- to them by scripts.py). claimed (HASH), deadlines (ZSET) and counts (HASH) are the
-- partition's keys, token the claim's.
-- Returns false when the claim had been reclaimed already (the URL is queued again; nothing
-- is counted twice).
local function finish_claim(claimed, deadlines, counts, token)
  if redis.call('HDEL', claimed, token) == 0 then
    return false
  end
  redis.call('ZREM', deadlines, token)
  redis.call('HINCRBY', counts, 'claimed', -1)
  redis.call('HINCRBY', counts, 'finished', 1)
  return true
end
