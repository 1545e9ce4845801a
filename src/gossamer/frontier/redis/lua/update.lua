-- gossamer frontier v2: rewrite a held claim's entry (a retry counted, a not-before time).
-- KEYS[1] claimed (HASH)
-- ARGV[1] claim token, ARGV[2] new entry
-- Returns 1 when the claim was still held, else 0.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
