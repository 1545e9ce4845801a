-- gossamer frontier v2: new priorities for entries queued in one partition.
-- KEYS[1] queue (LIST), KEYS[2] ranked (ZSET), KEYS[3] ranks (HASH), KEYS[4] counts (HASH),
-- KEYS[5] hosts (HASH)
-- ARGV: host key1, path1, priority1, host key2, ... (a priority as the entry writes it, '' for
-- 0). An entry keeps its place among its new equals (its order key). A partition still
-- queueing in its FIFO list moves it to the ranked set first when a priority other than 0 is
-- asked (entries claimed, leased or finished are not here: untouched).
-- Returns how many entries changed priority.
local n = 0
for i = 1, #ARGV, 3 do
  local new = tonumber(ARGV[i + 2]) or 0
  if new ~= 0 and redis.call('HEXISTS', KEYS[4], 'ranked') == 0 then
    to_ranked(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  end
  local id = redis.call('HGET', KEYS[5], ARGV[i])
  local member = id and redis.call('HGET', KEYS[3], id .. '|' .. ARGV[i + 1])
  if member then
    local stored = string.sub(member, 18)
    if priority_of(stored) ~= new then
      local rewritten = with_priority(stored, ARGV[i + 2])
      if rewritten then -- else malformed: left as it is, set aside when it is claimed
        local moved = string.sub(member, 1, 17) .. rewritten
        redis.call('ZREM', KEYS[2], member)
        redis.call('ZADD', KEYS[2], -new, moved)
        redis.call('HSET', KEYS[3], id .. '|' .. ARGV[i + 1], moved)
        n = n + 1
      end
    end
  end
end
return n
