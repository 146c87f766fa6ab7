-- Admission: check every bucket of one request and consume them all, or
-- none. One call per request; Redis runs it atomically, on its own clock.
--
-- KEYS[i]  the bucket's key
-- ARGV[1]  the caller's deadline on this server's clock (microseconds;
--          0: none): past it the caller has given up, and nothing is
--          consumed
-- ARGV     then three per bucket, in KEYS order:
--   "r", interval_us, burst     request rate (GCRA, as governor computes it)
--   "t", per_minute, reserve    token budget (refilling bucket)
--
-- Returns {1, v1, v2, ...}: admitted; vi is the remaining burst of a rate
-- bucket (its RateLimit-Remaining) and the balance after the reservation
-- of a token bucket. Or {0, i, wait_us}: bucket i refused, and the longest
-- wait of any refusing bucket; nothing was written. Or {2}: run after the
-- deadline; nothing was written.
--
-- A rate bucket stores its theoretical arrival time (TAT, microseconds);
-- a token bucket stores its balance and when it was computed. Neither
-- stores the limit, so new numbers from a policy reload apply to the
-- state as it is. Keys expire once the bucket would be full again: an
-- absent key is a full bucket.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local deadline = tonumber(ARGV[1])
if deadline > 0 and now > deadline then
  return {2}
end
local writes = {}
local out = {1}
local refused, worst = 0, -1
for i = 1, #KEYS do
  local kind = ARGV[3 * i - 1]
  local a = tonumber(ARGV[3 * i])
  local b = tonumber(ARGV[3 * i + 1])
  if kind == 'r' then
    local interval, tau = a, a * (b - 1)
    local tat = tonumber(redis.call('GET', KEYS[i])) or now
    local earliest = tat - tau
    if now < earliest then
      if earliest - now > worst then refused, worst = i, earliest - now end
    else
      local nxt = math.max(tat, now) + interval
      local remaining = math.floor(math.min(now + tau + interval - nxt, tau + interval) / interval)
      writes[i] = {'r', nxt, nxt - now}
      out[i + 1] = remaining
    end
  else
    local per_minute, reserve = a, b
    local rate = per_minute / 60000000
    local h = redis.call('HMGET', KEYS[i], 'b', 't')
    local balance = tonumber(h[1]) or per_minute
    local at = tonumber(h[2]) or now
    balance = math.min(balance + math.max(now - at, 0) * rate, per_minute)
    if balance <= 0 then
      local wait = math.min((1 - balance) / rate, 86400000000)
      if wait > worst then refused, worst = i, wait end
    else
      balance = balance - reserve
      writes[i] = {'t', balance, (per_minute - balance) / rate}
      out[i + 1] = math.floor(balance)
    end
  end
end
if refused > 0 then
  return {0, refused, math.ceil(worst)}
end
for i = 1, #KEYS do
  local w = writes[i]
  -- One second past the moment the bucket is full again.
  local ttl_ms = math.ceil(w[3] / 1000) + 1000
  if w[1] == 'r' then
    redis.call('SET', KEYS[i], w[2], 'PX', ttl_ms)
  else
    redis.call('HSET', KEYS[i], 'b', tostring(w[2]), 't', now)
    redis.call('PEXPIRE', KEYS[i], ttl_ms)
  end
end
return out
