-- Charge (or refund, when negative) `ARGV[1]` tokens to every token bucket
-- in KEYS at once, after the answer. ARGV[i + 1] is bucket i's
-- tokens_per_minute. The balance refills first, may go below zero, and a
-- refund never lifts it above full. A full bucket is deleted: an absent key
-- is a full bucket. Returns the balances after the charge, rounded down.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local amount = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS do
  local per_minute = tonumber(ARGV[i + 1])
  local rate = per_minute / 60000000
  local h = redis.call('HMGET', KEYS[i], 'b', 't')
  local balance = tonumber(h[1]) or per_minute
  local at = tonumber(h[2]) or now
  balance = math.min(balance + math.max(now - at, 0) * rate - amount, per_minute)
  if balance >= per_minute then
    redis.call('DEL', KEYS[i])
  else
    redis.call('HSET', KEYS[i], 'b', tostring(balance), 't', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil((per_minute - balance) / rate / 1000) + 1000)
  end
  out[i] = math.floor(balance)
end
return out
