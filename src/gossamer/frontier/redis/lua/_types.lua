-- gossamer frontier: a partition's keys checked before a script writes any (prepended by
-- scripts.py): a key of another type (hostile, or an operator's mistake) would fail the script
-- half-way, its entries taken out of one key and never written to the next. The worker sets
-- the partition aside on this reply (see faults.py). Each key is read by a command of its type
-- (no TYPE: the documented ACL does not allow it).
local TYPE_PROBES = {hash = 'HLEN', list = 'LLEN', zset = 'ZCARD', string = 'GET'}
local function wrong_type(...)
  -- pairs of (key, the type it must have when it exists); an error reply naming the first
  -- key of another type, else nil
  for i = 1, select('#', ...), 2 do
    local key, want = select(i, ...)
    local reply = redis.pcall(TYPE_PROBES[want], key)
    if type(reply) == 'table' and reply['err'] then
      if string.find(reply['err'], '^WRONGTYPE') then
        return redis.error_reply('WRONGTYPE ' .. key .. ' is not a ' .. want)
      end
      return reply
    end
  end
  return nil
end
