-- gossamer digests v2: the first URL of a page's exact content, or remember this URL as it.
-- exact (HASH exact hex -> url) and counts (HASH digested, exact, near) are in the shard of
-- the exact hash; hash the exact hash (16 hex). Returns the first URL of the content ('' when
-- this URL is now its first). A URL met again finds itself: the caller counts it as no exact
-- duplicate.
local function first_of(exact, counts, hash, url)
  redis.call('HINCRBY', counts, 'digested', 1)
  local first = redis.call('HGET', exact, hash)
  if first then
    if first ~= url then
      redis.call('HINCRBY', counts, 'exact', 1)
    end
    return first
  end
  redis.call('HSET', exact, hash, url)
  return ''
end
