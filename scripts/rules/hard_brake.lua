-- hard_brake: fires when a speed signal drops faster than a deceleration
-- threshold. The speed is a number at a fixed offset of each message on one
-- topic (by default a little-endian f32 in m/s at offset 0 of
-- "vehicle/speed"). Deceleration is measured between consecutive samples,
-- or, with window > 0, against the newest sample at least `window` seconds
-- older, which rides over sensor noise and quantization.
local topic  = param("topic", "vehicle/speed")
local offset = param("offset", 0)
local field  = param("field", "f32le")     -- any m:<accessor>
local scale  = param("scale", 1.0)         -- raw value * scale = m/s
local decel  = param("decel", 6.0)         -- m/s^2 that counts as hard braking
local max_gap = param("max_gap", 1.0)      -- s; no derivative across longer gaps
local window  = param("window", 0.0)       -- s; 0 = consecutive samples

rule {
  name = param("name", "hard_brake"),
  topics = { topic },
  pre = param("pre", "15s"),
  post = param("post", "5s"),
  cooldown = param("cooldown", "10s"),
  max_per_minute = param("max_per_minute", 6),
}

local win_ns = window * 1e9
local ring_v, ring_t, head, size = {}, {}, 0, 0   -- recent samples, for window > 0
local N = 256

local last_v, last_ts
local function check(ref_v, ref_ts, v, ts)
  local dt = (ts - ref_ts) / 1e9
  if dt > 0 and dt <= max_gap + window then
    local a = (ref_v - v) / dt
    if a > decel then
      trigger { reason = "hard-brake", severity = 2,
                tag = string.format("%.1f m/s^2 from %.1f to %.1f m/s", a, ref_v, v) }
    end
  end
end

function on_message(m)
  local v = m[field](m, offset) * scale
  local ts = m.ts
  if v ~= v then            -- NaN: a broken sample, forget the history
    last_v, size = nil, 0
    return
  end
  if window <= 0 then
    if last_v then check(last_v, last_ts, v, ts) end
    last_v, last_ts = v, ts
    return
  end
  -- newest sample at least `window` old
  local ref
  for i = 0, size - 1 do
    local j = (head - 1 - i) % N
    if ts - ring_t[j] >= win_ns then ref = j break end
  end
  if ref then check(ring_v[ref], ring_t[ref], v, ts) end
  ring_v[head], ring_t[head] = v, ts
  head = (head + 1) % N
  if size < N then size = size + 1 end
end
