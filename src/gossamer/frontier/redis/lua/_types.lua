-- gossamer frontier: a partition's keys checked before a script writes any (prepended by
-- scripts.py): a key of another type (hostile, or an operator's mistake) would fail the script
-- half-way, its entries taken out of one key and never written to the next. The worker sets
-- the partition aside on this reply (see faults.py).
local function wrong_type(...)
  -- pairs of (key, the type it must have when it exists); an error reply naming the first
  -- key of another type, else nil
  for i = 1, select('#', ...), 2 do
    local key, want = select(i, ...)
    local got = redis.call('TYPE', key)['ok']
    if got ~= 'none' and got ~= want then
      return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. got .. ', not a ' .. want)
    end
  end
  return nil
end
