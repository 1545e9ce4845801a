-- gossamer frontier v2: claim up to ARGV[1] entries from the front of a partition's queue (the
-- best ones of a ranked partition).
-- KEYS[1] queue (LIST), KEYS[2] claimed (HASH), KEYS[3] deadlines (ZSET), KEYS[4] counts (HASH),
-- KEYS[5] fence (HASH, see fence.lua), KEYS[6] ranked (ZSET), KEYS[7] ranks (HASH),
-- KEYS[8] hosts (HASH), KEYS[9] holder (STRING "worker:version")
-- ARGV[1] most entries to claim, ARGV[2] wall-clock deadline of the claims, ARGV[3] the
-- claiming worker ('' in url mode: no holder), ARGV[4] the assignment version it owns the
-- partition at, ARGV[5] 1 to take the partition over from its holder
-- Host mode: a claim records its worker as the partition's holder; another worker claims
-- there only once the holder gave the partition away (fence.lua deletes the record), or
-- takes it over (holders.py says when), never from a holder of a later version.
-- Claims hold entries as workers read them (host keys, not host numbers: see _ranked.lua).
-- Returns {last_token, entries left in the queue, entry...}; the i-th of n entries claimed has
-- token last_token - n + i. While the previous owner's fence stands: {-1, ms it has left};
-- while another worker holds the partition: {-2, its record}.
local wrong = wrong_type(KEYS[1], 'list', KEYS[2], 'hash', KEYS[3], 'zset', KEYS[4], 'hash',
  KEYS[5], 'hash', KEYS[6], 'zset', KEYS[7], 'hash', KEYS[8], 'hash', KEYS[9], 'string')
if wrong then
  return wrong
end
local me, held = ARGV[3], false
if me ~= '' then
  held = redis.call('GET', KEYS[9])
  local name, version = string.match(held or '', '^(.*):(%-?%d+)$')
  local later = name and #version <= 18 and tonumber(version) > tonumber(ARGV[4])
  if name and #version <= 18 and name ~= me and (ARGV[5] ~= '1' or later) then
    return {-2, held}
  end
end
local fences = redis.call('HVALS', KEYS[5])
if #fences > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local fenced = 0
  for _, fence in ipairs(fences) do
    fenced = math.max(fenced, tonumber(string.match(fence, '^(%d+)')) - now)
  end
  if fenced > 0 then
    return {-1, fenced}
  end
end
if me ~= '' and held ~= me .. ':' .. ARGV[4] then
  redis.call('SET', KEYS[9], me .. ':' .. ARGV[4])
end
local entries = redis.call('LPOP', KEYS[1], ARGV[1]) or {}
local want = tonumber(ARGV[1]) - #entries
if want > 0 then
  local members = redis.call('ZRANGE', KEYS[6], 0, want - 1)
  if #members > 0 then
    redis.call('ZREM', KEYS[6], unpack(members))
    for _, member in ipairs(members) do
      local stored = string.sub(member, 18)
      local identity = identity_of(stored)
      if identity then
        redis.call('HDEL', KEYS[7], identity)
      end
      entries[#entries + 1] = stored
    end
  end
end
if #entries == 0 then
  return {0, 0}
end
local n = #entries
local names = {}
for i = 1, n do
  entries[i] = unpack_entry(KEYS[8], entries[i], names)
end
local last = redis.call('HINCRBY', KEYS[4], 'token', n)
local out = {last, 0}
for i = 1, n do
  local token = last - n + i
  redis.call('HSET', KEYS[2], token, entries[i])
  redis.call('ZADD', KEYS[3], ARGV[2], token)
  out[i + 2] = entries[i]
end
redis.call('HINCRBY', KEYS[4], 'queued', -n)
redis.call('HINCRBY', KEYS[4], 'claimed', n)
out[2] = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[6])
return out
