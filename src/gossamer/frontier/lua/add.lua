-- gossamer frontier v1: add URLs to one partition, each once.
-- KEYS[1] seen (SET), KEYS[2] queue (LIST), KEYS[3] counts (HASH), KEYS[4] ranked (ZSET),
-- KEYS[5] ranks (HASH)
-- ARGV[1] '1' when an entry has a priority other than 0, else '0'; then fp1, entry1, fp2,
-- entry2, ...
-- Returns 1 for each fingerprint seen for the first time (its entry was queued), else 0.
local out = {}
local added = 0
local plain = ARGV[1] == '0' and redis.call('HEXISTS', KEYS[3], 'ranked') == 0
for i = 2, #ARGV, 2 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    if plain then
      redis.call('RPUSH', KEYS[2], ARGV[i + 1])
    else
      enqueue(KEYS[2], KEYS[4], KEYS[5], KEYS[3], ARGV[i + 1], false)
    end
    added = added + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[3], 'queued', added)
  redis.call('HINCRBY', KEYS[3], 'seen', added)
end
return out
