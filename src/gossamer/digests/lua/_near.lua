-- gossamer digests v2: remember URL url as the first of SimHash hash (16 hex) in near_map,
-- unless a URL is there already, and add the SimHash to the band SETs KEYS[bands..] unless
-- one holds most members already. 1 when the URL was stored.
local function join(near_map, bands, hash, url, most)
  local stored = redis.call('HSETNX', near_map, hash, url)
  for i = bands, #KEYS do
    if redis.call('SCARD', KEYS[i]) < most then
      redis.call('SADD', KEYS[i], hash)
    end
  end
  return stored
end
