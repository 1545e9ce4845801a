-- gossamer frontier v2: queue now the pages a sitemap or feed lists with a lastmod newer than
-- their last fetch (those waiting for their revisit: out ones are being fetched already).
-- KEYS[1] due (ZSET), KEYS[2] revisits (HASH), KEYS[3] queue (LIST), KEYS[4] counts (HASH),
-- KEYS[5] ranked (ZSET), KEYS[6] ranks (HASH), KEYS[7] hosts (HASH)
-- ARGV: fingerprint, lastmod (epoch seconds), fingerprint, lastmod, ...
-- Returns how many were queued.
local wrong = wrong_type(KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'list', KEYS[4], 'hash',
  KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash')
if wrong then
  return wrong
end
local n = 0
for i = 1, #ARGV, 2 do
  local fp = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], fp) then
    local state = revisit_state(KEYS[2], fp)
    if state == nil then
      redis.call('ZREM', KEYS[1], fp)
    elseif state[1] < tonumber(ARGV[i + 1]) then
      n = n + queue_revisit(KEYS, fp, state)
    end
  end
end
if n > 0 then
  redis.call('HINCRBY', KEYS[4], 'queued', n)
end
return n
