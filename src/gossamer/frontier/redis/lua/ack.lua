-- gossamer frontier v2: finish a claimed entry (finish_claim: _finish.lua).
-- KEYS[1] claimed (HASH), KEYS[2] deadlines (ZSET), KEYS[3] counts (HASH)
-- ARGV[1] claim token
-- Returns 1 when the claim was still held (the URL is finished now), 0 when it had been
-- reclaimed already (the URL is queued again; nothing is counted twice).
if not finish_claim(KEYS[1], KEYS[2], KEYS[3], ARGV[1]) then
  return 0
end
return 1
