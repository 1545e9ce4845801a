-- gossamer frontier v1: add URLs to one partition, each once.
-- KEYS[1] seen (SET), KEYS[2] queue (LIST), KEYS[3] counts (HASH)
-- ARGV: fp1, entry1, fp2, entry2, ...
-- Returns 1 for each fingerprint seen for the first time (its entry was queued), else 0.
local out = {}
local added = 0
for i = 1, #ARGV, 2 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[i + 1])
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
