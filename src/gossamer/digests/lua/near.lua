-- KEYS[1] the near map of the SimHash's shard, KEYS[2..] its band SETs (one server only: a
-- Redis Cluster's worker adds the SimHash to them by band.lua); ARGV[1] SimHash (16 hex),
-- ARGV[2] url, ARGV[3] most members of a band set (after _near.lua).
return join(KEYS[1], 2, ARGV[1], ARGV[2], tonumber(ARGV[3]))
