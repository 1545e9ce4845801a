-- gossamer frontier v3: add URLs to one partition, each once.
-- KEYS[1] seen (the prefix of its SETs), KEYS[2] queue (LIST), KEYS[3] counts (HASH),
-- KEYS[4] ranked (ZSET), KEYS[5] ranks (HASH), KEYS[6] hosts (HASH)
-- ARGV[1] '1' when an entry has a priority other than 0, else '0'; ARGV[2] the highest host
-- number the call names; then the URLs by host: a host's key (as entries name it, "http...")
-- or "#<its number>", followed by each of its URLs as two arguments, the fingerprint and the
-- entry: "|<numbers>|<path>" after a key (the script puts the host's number in front), the
-- entry as stored after a number ("<number>|<numbers>|<path>"; "#" and "|..." for a URL
-- without a host, set aside when claimed). The worker learns each host's number from the
-- reply (a partition never renumbers a host) and sends the entries of the hosts it knows
-- ready to store; the first byte of an argument tells a host from a fingerprint (a digit or
-- '-'), so the script converts no string to a number but the fingerprints' few digits below.
-- The seen set is split by linear hashing into SETs "<seen>:<n>" of at most a few hundred
-- fingerprints each, so that every one stays an intset (8 bytes a fingerprint) under Redis'
-- default set-max-intset-entries (512): counts' sl (level) and sp (split pointer) say how
-- many there are (2^sl + sp); one is split in two each time the partition has seen LOAD more.
-- A URL costs one SADD; its new entry goes out with the call's others in one RPUSH, and the
-- counts are written once a call.
-- Returns {how many fingerprints were seen for the first time (their entries were queued),
-- the number of each host named by its key, in order}; {-1} and nothing done when ARGV[2] is
-- a number the partition never gave (the worker's numbers are not this job's: it sends again
-- with every host named).
local LOAD = 192
local PUSH = 1000 -- entries an RPUSH at most (Lua's unpack has a limit)
local HASH, MINUS = 35, 45 -- '#', '-'
local state = redis.call('HMGET', KEYS[3], 'sl', 'sp', 'seen', 'ranked', 'queued', 'hosts')
if tonumber(ARGV[2]) > (tonumber(state[6]) or 0) then
  return {-1}
end
local level, split = tonumber(state[1]) or 0, tonumber(state[2]) or 0
local seen, queued = tonumber(state[3]) or 0, tonumber(state[5]) or 0
local plain = ARGV[1] == '0' and not state[4]
local width = 2 ^ level -- SETs below the split pointer use one bit more
local limit = LOAD * (width + split)
local byte, format = string.byte, string.format
local function hash_of(fp)
  -- six decimal digits from the middle of the fingerprint (a number below 10^6, read digit
  -- by digit: no string made, no strtod), apart from the low bits that place a URL in its
  -- partition (partition_by = "url"); 0 for a fingerprint under 10^12 in size (rare)
  local a, b, c, d, e, f = byte(fp, -13, -8)
  if f == nil then
    return 0
  end
  return ((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f - 5333328
end
local function split_one()
  local from = format('%s:%d', KEYS[1], split)
  local moved = {}
  for _, fp in ipairs(redis.call('SMEMBERS', from)) do
    if hash_of(fp) % (2 * width) ~= split then
      moved[#moved + 1] = fp
    end
  end
  if #moved > 0 then -- at most a few hundred: one SREM and one SADD
    redis.call('SREM', from, unpack(moved))
    redis.call('SADD', format('%s:%d', KEYS[1], split + width), unpack(moved))
  end
  split = split + 1
  if split == width then
    level, split, width = level + 1, 0, 2 * width
  end
  limit = LOAD * (width + split)
end
local added = 0
local fresh = {} -- the new entries of a plain partition, pushed at the end
local seen_keys = {} -- SET number -> its name
local reply = {0} -- how many were added, then the numbers of the hosts named by key
local id = nil -- the current host's number when named by key, else nil (entries as stored)
local j, n = 3, #ARGV
while j <= n do
  local arg = ARGV[j]
  local first = byte(arg, 1) or HASH
  if first == HASH then
    id, j = nil, j + 1
  elseif first ~= MINUS and (first < 48 or first > 57) then
    id = host_id(KEYS[6], KEYS[3], arg, nil)
    reply[#reply + 1] = id
    j = j + 1
  else
    local h = hash_of(arg)
    local b = h % width
    if b < split then
      b = h % (2 * width)
    end
    local key = seen_keys[b]
    if key == nil then
      key = format('%s:%d', KEYS[1], b) -- '%d': Lua's own number format is a float's
      seen_keys[b] = key
    end
    if redis.call('SADD', key, arg) == 1 then
      added = added + 1
      local stored = id and id .. ARGV[j + 1] or ARGV[j + 1]
      if plain then
        fresh[#fresh + 1] = stored
      else
        enqueue(KEYS[2], KEYS[4], KEYS[5], KEYS[3], stored, false)
      end
      while seen + added > limit do
        split_one()
      end
    end
    j = j + 2
  end
end
for at = 1, #fresh, PUSH do
  redis.call('RPUSH', KEYS[2], unpack(fresh, at, math.min(at + PUSH - 1, #fresh)))
end
if added > 0 then
  redis.call('HSET', KEYS[3], 'queued', format('%d', queued + added),
    'seen', format('%d', seen + added), 'sl', format('%d', level), 'sp', format('%d', split))
end
reply[1] = added
return reply
