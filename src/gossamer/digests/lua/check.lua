-- gossamer digests v2, one Redis server only (its keys span shards; on a Redis Cluster the
-- worker pipelines exact.lua and members.lua instead): a whole check in one call for most
-- pages. The exact hash as exact.lua (after _exact.lua); then, unless another URL had the
-- content, the SimHash's band sets as members.lua reads them; a new content whose band sets
-- are all empty (no SimHash can be near it) joins the index at once (after _near.lua).
-- KEYS[1] exact, KEYS[2] counts (the exact hash's shard), KEYS[3] the near map of the
-- SimHash's shard, KEYS[4..] its band SETs. ARGV[1] exact hash (16 hex), ARGV[2] url,
-- ARGV[3] SimHash (16 hex), ARGV[4] most members of a band set, ARGV[5] most members read of
-- one.
-- Returns {first, joined, members of each band set...}: first as exact.lua's; joined 1 when
-- the SimHash joined the index here (no band sets then, nor for an exact duplicate).
local url = ARGV[2]
local first = first_of(KEYS[1], KEYS[2], ARGV[1], url)
if first ~= '' and first ~= url then
  return {first, 0}
end
local reply, found = {first, 0}, false
for i = 4, #KEYS do
  local members = redis.call('SRANDMEMBER', KEYS[i], tonumber(ARGV[5]))
  found = found or #members > 0
  reply[#reply + 1] = members
end
if found or first ~= '' then
  return reply
end
join(KEYS[3], 4, ARGV[3], url, tonumber(ARGV[4]))
return {first, 1}
