-- gossamer frontier v2: a partition's entries as stored, and its ranked queue; shared by the
-- scripts that queue or take entries (prepended to them by scripts.py).
-- An entry as a worker writes and reads it: "<host key>|<numbers>|<path>", <numbers> the
-- depth alone when the others are 0, else "<depth>,<hops>,<attempts>,<not_before>,<priority>"
-- (a number 0 written ''). As the partition stores it, the host key is the host's number in
-- the partition's hosts HASH (host key -> number and number -> host key), so a host's name is
-- stored once, not in each of its URLs.
-- A partition queues in its FIFO list (queue) until an entry with a priority other than 0
-- arrives; then, once, the list moves to the ranked set and every later entry of the partition
-- goes there: ranked (ZSET, score -priority, member "<order>|<stored entry>", <order> 16
-- characters: '1' and an arrival counter for the back, '0' and a falling counter for the front
-- of a priority) and ranks (HASH "<host number>|<path>" -> member).
local function host_id(hosts, counts, host, ids)
  if host == '' then
    return ''
  end
  local id = ids and ids[host]
  if id then
    return id
  end
  id = redis.call('HGET', hosts, host)
  if not id then
    id = tostring(redis.call('HINCRBY', counts, 'hosts', 1))
    redis.call('HSET', hosts, host, id, id, host)
  end
  if ids then
    ids[host] = id
  end
  return id
end
local function pack(hosts, counts, entry, ids)
  -- ids: an optional table host key -> number the caller keeps across its entries
  local host, rest = string.match(entry, '^([^|]*)(|.*)$')
  if host == nil then
    return '||' .. entry -- malformed: set aside when it is claimed
  end
  return host_id(hosts, counts, host, ids) .. rest
end
local function unpack_entry(hosts, stored, names)
  local id, rest = string.match(stored, '^([^|]*)(|.*)$')
  if id == nil or id == '' then
    return stored
  end
  local host = names[id]
  if host == nil then
    host = redis.call('HGET', hosts, id) or ''
    names[id] = host
  end
  return host .. rest
end
local function identity_of(stored)
  local id, path = string.match(stored, '^([^|]*)|[^|]*|(.*)$')
  if id == nil then
    return nil
  end
  return id .. '|' .. path
end
local function priority_field(stored)
  local numbers = string.match(stored, '^[^|]*|([^|]*)|')
  if numbers == nil then
    return nil
  end
  return string.match(numbers, '^[^,]*,[^,]*,[^,]*,[^,]*,([^,]*)$') or ''
end
local function priority_of(stored)
  local field = priority_field(stored)
  if field == nil or field == '' then
    return 0
  end
  local p = tonumber(field)
  if p == nil or p ~= p or p == math.huge or p == -math.huge then
    return 0 -- a malformed entry: set aside when it is claimed
  end
  return p
end
local function with_priority(stored, priority)
  -- ``stored`` with its priority field set to ``priority`` (as written, '' for 0); nil when
  -- it is malformed
  local id, numbers, path = string.match(stored, '^([^|]*)|([^|]*)|(.*)$')
  if id == nil then
    return nil
  end
  local fields = {}
  for field in string.gmatch(numbers .. ',', '([^,]*),') do
    fields[#fields + 1] = field
  end
  if #fields == 1 then
    fields = {fields[1], '', '', '', ''}
  elseif #fields ~= 5 then
    return nil
  end
  fields[5] = priority
  numbers = fields[1]
  if fields[2] .. fields[3] .. fields[4] .. fields[5] ~= '' then
    numbers = table.concat(fields, ',')
  end
  return id .. '|' .. numbers .. '|' .. path
end
local function order_key(counts, front)
  if front then
    return string.format('0%015d', 999999999999999 - redis.call('HINCRBY', counts, 'front', 1))
  end
  return string.format('1%015d', redis.call('HINCRBY', counts, 'order', 1))
end
local function rank(ranked, ranks, counts, stored, front)
  local member = order_key(counts, front) .. '|' .. stored
  redis.call('ZADD', ranked, -priority_of(stored), member)
  local identity = identity_of(stored)
  if identity then
    redis.call('HSET', ranks, identity, member)
  end
end
local function to_ranked(queue, ranked, ranks, counts)
  if redis.call('HSETNX', counts, 'ranked', 1) == 0 then
    return
  end
  for _, stored in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    rank(ranked, ranks, counts, stored, false)
  end
  redis.call('DEL', queue)
end
local function enqueue(queue, ranked, ranks, counts, stored, front)
  if priority_of(stored) ~= 0 then
    to_ranked(queue, ranked, ranks, counts)
  end
  if redis.call('HEXISTS', counts, 'ranked') == 1 then
    rank(ranked, ranks, counts, stored, front)
  elseif front then
    redis.call('LPUSH', queue, stored)
  else
    redis.call('RPUSH', queue, stored)
  end
end
