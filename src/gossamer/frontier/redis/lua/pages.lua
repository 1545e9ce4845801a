-- gossamer frontier v2: a host's page count, for per-host page budgets (pages.py).
-- KEYS[1] the pages HASH of the host's partition; ARGV[1] the host key; ARGV[2] the change
-- (0: only read). Returns the count after the change.
local change = tonumber(ARGV[2])
if change ~= 0 then
  return redis.call('HINCRBY', KEYS[1], ARGV[1], change)
end
return tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
