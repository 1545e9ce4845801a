-- gossamer digests v2: the first URL of a page's exact content, or remember this URL as it.
-- KEYS[1] exact (HASH exact hex -> url), KEYS[2] counts (HASH digested, exact, near): both
-- in the shard of the exact hash. ARGV[1] exact hash (16 hex), ARGV[2] url.
-- Returns the first URL of the content ('' when this URL is now its first). A URL met again
-- finds itself: the caller counts it as no exact duplicate.
redis.call('HINCRBY', KEYS[2], 'digested', 1)
local first = redis.call('HGET', KEYS[1], ARGV[1])
if first then
  if first ~= ARGV[2] then
    redis.call('HINCRBY', KEYS[2], 'exact', 1)
  end
  return first
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ''
