-- gossamer frontier v2: add URLs to one partition, each once.
-- KEYS[1] seen (the prefix of its SETs), KEYS[2] queue (LIST), KEYS[3] counts (HASH),
-- KEYS[4] ranked (ZSET), KEYS[5] ranks (HASH), KEYS[6] hosts (HASH)
-- ARGV[1] '1' when an entry has a priority other than 0, else '0'; ARGV[2] the URLs, each
-- "<fingerprint>|<entry>" ended by a newline (no entry holds one: a canonical URL has no
-- whitespace).
-- The seen set is split by linear hashing into SETs "<seen>:<n>" of at most a few hundred
-- fingerprints each, so that every one stays an intset (8 bytes a fingerprint) under Redis'
-- default set-max-intset-entries (512): counts' sl (level) and sp (split pointer) say how
-- many there are (2^sl + sp); one is split in two each time the partition has seen LOAD more.
-- Returns how many fingerprints were seen for the first time (their entries were queued): a
-- count, one integer to read back and one argument to send for a whole batch.
local LOAD = 192
local state = redis.call('HMGET', KEYS[3], 'sl', 'sp', 'seen', 'ranked')
local level, split = tonumber(state[1]) or 0, tonumber(state[2]) or 0
local seen = tonumber(state[3]) or 0
local plain = ARGV[1] == '0' and not state[4]
local function hash_of(fp)
  -- 9 decimal digits from the middle of the fingerprint: exact in Lua's doubles, and apart
  -- from the low bits that place a URL in its partition (partition_by = "url"); a sign in
  -- them (a fingerprint under 10^15 in size, rare) only makes the number negative
  return tonumber(string.sub(fp, -16, -8)) or 0
end
local function bucket_of(fp)
  local h = hash_of(fp)
  local b = h % 2 ^ level
  if b < split then
    b = h % 2 ^ (level + 1)
  end
  return b
end
local function split_one()
  local from = KEYS[1] .. ':' .. split
  local moved = {}
  for _, fp in ipairs(redis.call('SMEMBERS', from)) do
    if hash_of(fp) % 2 ^ (level + 1) ~= split then
      moved[#moved + 1] = fp
    end
  end
  if #moved > 0 then -- at most a few hundred: one SREM and one SADD
    redis.call('SREM', from, unpack(moved))
    redis.call('SADD', KEYS[1] .. ':' .. (split + 2 ^ level), unpack(moved))
  end
  split = split + 1
  if split == 2 ^ level then
    level, split = level + 1, 0
  end
end
local added = 0
local ids = {} -- host key -> number, for this call: a batch names few hosts many times
local seen_keys = {} -- bucket -> its SET's name
for fp, entry in string.gmatch(ARGV[2], '([^|\n]*)|([^\n]*)\n') do
  local b = bucket_of(fp)
  local key = seen_keys[b]
  if key == nil then
    key = KEYS[1] .. ':' .. b
    seen_keys[b] = key
  end
  if redis.call('SADD', key, fp) == 1 then
    local stored = pack(KEYS[6], KEYS[3], entry, ids)
    if plain then
      redis.call('RPUSH', KEYS[2], stored)
    else
      enqueue(KEYS[2], KEYS[4], KEYS[5], KEYS[3], stored, false)
    end
    added = added + 1
    while seen + added > LOAD * (2 ^ level + split) do
      split_one()
    end
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[3], 'queued', added)
  redis.call('HINCRBY', KEYS[3], 'seen', added)
  redis.call('HSET', KEYS[3], 'sl', level, 'sp', split)
end
return added
