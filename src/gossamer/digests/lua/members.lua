-- gossamer digests v2: up to ARGV[1] SimHashes of one band set (KEYS[1]).
return redis.call('SRANDMEMBER', KEYS[1], tonumber(ARGV[1]))
