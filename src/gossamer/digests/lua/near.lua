-- gossamer digests v2: remember URL ARGV[2] as the first of SimHash ARGV[1] (16 hex) in the
-- near map KEYS[1], unless a URL is there already; 1 when it was stored.
return redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
