-- gossamer digests v2: add a SimHash to one band set, unless the set is full.
-- KEYS[1] the band SET; ARGV[1] SimHash (16 hex), ARGV[2] most members of a band set.
if redis.call('SCARD', KEYS[1]) < tonumber(ARGV[2]) then
  return redis.call('SADD', KEYS[1], ARGV[1])
end
return 0
