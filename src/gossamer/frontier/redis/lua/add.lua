-- gossamer frontier v4: add URLs to one partition, each once.
-- KEYS[1] seen (the prefix of its SETs), KEYS[2] queue (LIST), KEYS[3] counts (HASH); the
-- partition's ranked (ZSET), ranks and hosts (HASHes) are named from counts' name when needed
-- (every key of a partition is "gs:{<job>:<partition>}:<name>", one slot): fewer arguments
-- to read a call.
-- ARGV[1] '1' when an entry has a priority other than 0, else '0'; ARGV[2] the highest host
-- number the call names; ARGV[3] how many URLs come first as stored: each two arguments, its
-- fingerprint and its entry as stored ("<number>|<numbers>|<path>", or "|..." for a URL
-- without a host, set aside when claimed). Then the URLs of the hosts the worker has no number
-- for, by host: the host's key (as entries name it, "http..."), followed by each of its URLs
-- as two arguments, the fingerprint and "|<numbers>|<path>" (the script puts the host's number
-- in front). The worker learns each host's number from the reply (a partition never renumbers
-- a host); the first byte of an argument after the stored URLs tells a host from a fingerprint
-- (a digit or '-'), so the script converts no string to a number but a few digits of each
-- fingerprint (and ARGV[2], ARGV[3] and the counts).
-- The seen set is split by linear hashing into SETs "<seen>:<n>" of a few hundred fingerprints
-- each, so that every one stays an intset (8 bytes a fingerprint) under Redis' default
-- set-max-intset-entries (512): counts' sl (level) and sp (split pointer) say how many there
-- are (4^sl + 3 sp). Each time the partition has seen LOAD more, the SET at the split pointer
-- is split in four: read once, deleted and written again in order (an append to an intset
-- moves nothing). Four ways rather than two: while the partition grows, a fingerprint is read
-- and written again by splits about half as often. The fullest SETs, those last split in a
-- level, hold 4 LOAD (400) on average, five standard deviations under 512.
-- A URL costs one SADD; its new entry goes out with the call's others in one RPUSH, and the
-- counts are written once a call (the level and split pointer only when a split moved them).
-- Returns {how many fingerprints were seen for the first time (their entries were queued),
-- the number of each host named by its key, in order}; {-1} and nothing done when ARGV[2] is
-- a number the partition never gave (the worker's numbers are not this job's: it sends again
-- with every host named).
local LOAD, FANOUT = 100, 4
local PUSH = 1000 -- arguments of a command at most (Lua's unpack has a limit)
local MINUS = 45 -- '-'
local call, byte, char, format = redis.call, string.byte, string.char, string.format
local SEEN, QUEUE, COUNTS, argv = KEYS[1], KEYS[2], KEYS[3], ARGV -- locals: no global look-up
local state = call('HMGET', COUNTS, 'sl', 'sp', 'seen', 'ranked', 'queued', 'hosts')
if ARGV[2] ~= '0' and tonumber(ARGV[2]) > (tonumber(state[6]) or 0) then
  return {-1}
end
local level, split = tonumber(state[1]) or 0, tonumber(state[2]) or 0
local level0, split0 = level, split
local seen, queued = tonumber(state[3]) or 0, tonumber(state[5]) or 0
local plain = ARGV[1] == '0' and not state[4]
local function key(name) -- another key of the partition, from counts' name
  return string.sub(COUNTS, 1, -7) .. name
end
local RANKED, RANKS = nil, nil -- named once a call, when the partition is not plain
if not plain then
  RANKED, RANKS = key('ranked'), key('ranks')
end
local width = FANOUT ^ level -- SETs below the split pointer use FANOUT times as many
local span = FANOUT * width
local limit = LOAD * (width + (FANOUT - 1) * split)
local prefix = SEEN .. ':'
local names = {} -- SET number -> its name, made once a call (no string.format for most)
local function name(b)
  local set
  if b < 10 then
    set = prefix .. char(48 + b)
  elseif b < 100 then
    set = prefix .. char(48 + (b - b % 10) / 10, 48 + b % 10)
  else
    set = format('%s%d', prefix, b) -- '%d': Lua's own number format is a float's
  end
  names[b] = set
  return set
end
-- A fingerprint's SET comes from six decimal digits from its middle (a number below 10^6, read
-- with one string.byte: no string made, no strtod), apart from the low bits that place a URL
-- in its partition (partition_by = "url"); 0 for a fingerprint under 10^12 in size (rare).
-- It is written out where it is used rather than called: a Lua function call a URL costs
-- Redis a few hundred instructions more.
local ZERO = 5333328 -- 48 * 111111: '0' in each of the six digits
local function split_one()
  local from = names[split] or name(split)
  local into = {}
  for k = 0, FANOUT - 1 do
    into[k] = {}
  end
  local members = call('SMEMBERS', from) -- an intset's, in order
  for i = 1, #members do
    local fp = members[i]
    local a, b, c, d, e, f = byte(fp, -13, -8)
    local h = f and ((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f - ZERO or 0
    local moved = into[(h % span - h % width) / width]
    moved[#moved + 1] = fp
  end
  call('DEL', from)
  for k = 0, FANOUT - 1 do
    local moved, b = into[k], split + k * width
    for at = 1, #moved, PUSH do
      call('SADD', names[b] or name(b), unpack(moved, at, math.min(at + PUSH - 1, #moved)))
    end
  end
  split = split + 1
  if split == width then
    level, split, width, span = level + 1, 0, span, FANOUT * span
  end
  limit = LOAD * (width + (FANOUT - 1) * split)
end
local added = 0
local fresh = {} -- the new entries of a plain partition, pushed at the end
local reply = {0} -- how many were added, then the numbers of the hosts named by key
local id = nil -- the number of the host named last
local j, n, last = 4, #argv, 3 + 2 * tonumber(argv[3])
while j <= n do
  local fp = argv[j]
  local first = j > last and byte(fp, 1) or MINUS
  if first ~= MINUS and (first < 48 or first > 57) then
    id = host_id(key('hosts'), COUNTS, fp, nil)
    reply[#reply + 1] = id
    j = j + 1
  else
    local a, b, c, d, e, f = byte(fp, -13, -8)
    local h = f and ((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f - ZERO or 0
    local set = h % width
    if set < split then
      set = h % span
    end
    if call('SADD', names[set] or name(set), fp) == 1 then
      added = added + 1
      local entry = argv[j + 1]
      if j > last then
        entry = id .. entry
      end
      if plain then
        fresh[added] = entry
      else
        enqueue(QUEUE, RANKED, RANKS, COUNTS, entry, false)
      end
      while seen + added > limit do
        split_one()
      end
    end
    j = j + 2
  end
end
for at = 1, #fresh, PUSH do
  call('RPUSH', QUEUE, unpack(fresh, at, math.min(at + PUSH - 1, #fresh)))
end
if added > 0 and (level ~= level0 or split ~= split0) then
  call('HSET', COUNTS, 'queued', format('%d', queued + added),
    'seen', format('%d', seen + added), 'sl', format('%d', level), 'sp', format('%d', split))
elseif added > 0 then
  call('HSET', COUNTS, 'queued', format('%d', queued + added), 'seen', format('%d', seen + added))
end
reply[1] = added
return reply
