-- gossamer frontier v1: add URLs to one partition, each once.
-- KEYS[1] seen (SET), KEYS[2] queue (LIST), KEYS[3] counts (HASH), KEYS[4] ranked (ZSET),
-- KEYS[5] ranks (HASH)
-- ARGV[1] '1' when an entry has a priority other than 0, else '0'; ARGV[2] the entries, each
-- ended by a newline (no entry holds one: a canonical URL has no whitespace); an entry's
-- fingerprint is its first field.
-- Returns how many fingerprints were seen for the first time (their entries were queued): a
-- count, one integer to read back and one argument to send for a whole batch.
local added = 0
local plain = ARGV[1] == '0' and redis.call('HEXISTS', KEYS[3], 'ranked') == 0
for entry in string.gmatch(ARGV[2], '([^\n]+)\n') do
  if redis.call('SADD', KEYS[1], string.match(entry, '^[^|]+')) == 1 then
    if plain then
      redis.call('RPUSH', KEYS[2], entry)
    else
      enqueue(KEYS[2], KEYS[4], KEYS[5], KEYS[3], entry, false)
    end
    added = added + 1
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[3], 'queued', added)
  redis.call('HINCRBY', KEYS[3], 'seen', added)
end
return added
