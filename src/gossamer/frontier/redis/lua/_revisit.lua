-- gossamer frontier v2: a page's revisit queued (prepended, after _ranked.lua, to the scripts
-- that queue revisits). A page's revisit state (HASH revisits, fp -> JSON array [fetched_at,
-- depth, url, ...], see revisits.py; the url with a seed's password masked, as entries hold it)
-- gives its entry; a state that does not decode is dropped
-- (the page is no longer revisited; an entry that still does not decode is set aside when
-- claimed). KEYS of the caller: due (ZSET), revisits (HASH), queue, counts, ranked, ranks,
-- hosts.
local function revisit_state(revisits, fp)
  local packed = redis.call('HGET', revisits, fp)
  if not packed then
    return nil
  end
  local ok, state = pcall(cjson.decode, packed)
  if ok and type(state) == 'table' and type(state[1]) == 'number'
      and type(state[2]) == 'number' and type(state[3]) == 'string' then
    return state
  end
  redis.call('HDEL', revisits, fp)
  return nil
end
local function queue_revisit(keys, fp, state)
  redis.call('ZREM', keys[1], fp)
  if state == nil then
    return 0
  end
  local host, path = string.match(state[3], '^([^|/]*//[^/|]*)(/.*)$')
  local entry = '||' .. state[3] -- no host key: set aside when it is claimed
  if host then
    local depth = state[2] ~= 0 and string.format('%d', state[2]) or ''
    entry = host .. '|' .. depth .. '|' .. path
  end
  enqueue(keys[3], keys[5], keys[6], keys[4], pack(keys[7], keys[4], entry), false)
  return 1
end
