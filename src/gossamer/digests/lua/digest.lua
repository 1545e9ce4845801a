-- gossamer digests v1: the first URL of a page's content, or remember this URL as its first.
-- KEYS[1] exact (HASH exact hex -> url), KEYS[2] near (HASH simhash hex -> url),
-- KEYS[3] counts (HASH digested, exact, near), KEYS[4..] the SimHash's band SETs (simhashes)
-- ARGV[1] exact hash (16 hex), ARGV[2] SimHash (16 hex; '' for none: exact duplicates only,
-- and no band keys), ARGV[3] url, ARGV[4] threshold,
-- ARGV[5] most members of a band set
-- Returns {kind, first url, distance}: kind 'exact' or 'near', or '' when this URL is now
-- the content's first (a URL met again finds itself: the caller counts it as no duplicate).
local function popcount(x)
  local n = 0
  while x ~= 0 do
    x = bit.band(x, x - 1)
    n = n + 1
  end
  return n
end

local function halves(hex)
  return tonumber(string.sub(hex, 1, 8), 16), tonumber(string.sub(hex, 9, 16), 16)
end

local url = ARGV[3]
redis.call('HINCRBY', KEYS[3], 'digested', 1)
local first = redis.call('HGET', KEYS[1], ARGV[1])
if first then
  if first ~= url then
    redis.call('HINCRBY', KEYS[3], 'exact', 1)
  end
  return {'exact', first, 0}
end
local threshold = tonumber(ARGV[4])
if ARGV[2] == '' then
  redis.call('HSET', KEYS[1], ARGV[1], url)
  return {'', '', 0}
end
local hi, lo = halves(ARGV[2])
local best, distance = nil, 65
for i = 4, #KEYS do
  for _, member in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    local mhi, mlo = halves(member)
    if mhi and mlo then
      local d = popcount(bit.bxor(hi, mhi)) + popcount(bit.bxor(lo, mlo))
      if d <= threshold and d < distance then
        best, distance = member, d
      end
    end
  end
end
if best then
  first = redis.call('HGET', KEYS[2], best)
  if first then
    if first ~= url then
      redis.call('HINCRBY', KEYS[3], 'near', 1)
    end
    return {'near', first, distance}
  end
end
redis.call('HSET', KEYS[1], ARGV[1], url)
if redis.call('HSETNX', KEYS[2], ARGV[2], url) == 1 then
  local most = tonumber(ARGV[5])
  for i = 4, #KEYS do
    if redis.call('SCARD', KEYS[i]) < most then
      redis.call('SADD', KEYS[i], ARGV[2])
    end
  end
end
return {'', '', 0}
