-- libidgen worker mode: reserve the seconds a worker id's holder may stamp, fenced.
-- KEYS[1] idgen:<prefix>:w<N>:reserve (hash: fence, until); ARGV[1] the holder's librlock
-- fencing token, ARGV[2] the last second it may stamp (Unix s), ARGV[3] the hash's TTL (s).
-- A lower fence than the stored one is refused (-1): that holder lost the worker id to a
-- later one and must stop. A higher fence is a new holder: `until` keeps the larger of
-- the two, so it never falls below what the last holder was allowed. The same fence sets
-- `until` as given (a clean release lowers it to the last second really stamped).
-- Returns `until` as it was before this call (0 for none).
local f = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
local fence = tonumber(ARGV[1])
if fence < f then
    return -1
end
local old = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
local new = tonumber(ARGV[2])
if fence > f and old > new then
    new = old
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'until', new)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return old
