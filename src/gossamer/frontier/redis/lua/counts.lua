-- gossamer frontier v2: the counts of many partitions in one call (one Redis server only: a
-- Redis Cluster keeps each partition in its own slot, and reads them one by one).
-- KEYS the partitions' counts (HASH)
-- Returns {queued, claimed, seen, finished, busy, broken}: sums over KEYS, busy a flat list of
-- (index in KEYS from 0, queued, claimed) for every partition with entries queued or claimed,
-- and broken the indexes of the keys that are not a HASH (left out of the sums).
local queued, claimed, seen, finished = 0, 0, 0, 0
local busy, broken = {}, {}
for i, key in ipairs(KEYS) do
  local row = redis.pcall('HMGET', key, 'queued', 'claimed', 'seen', 'finished')
  if row.err then
    broken[#broken + 1] = i - 1
  else
    local q = tonumber(row[1]) or 0
    local c = tonumber(row[2]) or 0
    queued = queued + q
    claimed = claimed + c
    seen = seen + (tonumber(row[3]) or 0)
    finished = finished + (tonumber(row[4]) or 0)
    if q > 0 or c > 0 then
      busy[#busy + 1] = i - 1
      busy[#busy + 1] = q
      busy[#busy + 1] = c
    end
  end
end
return {queued, claimed, seen, finished, busy, broken}
