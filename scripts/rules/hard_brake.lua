-- hard_brake: fires when a speed signal drops faster than a deceleration
-- threshold. The speed is a number at a fixed offset of each message on one
-- topic (by default a little-endian f32 in m/s at offset 0 of
-- "vehicle/speed"), or a field named by `path` on a topic whose type declares
-- its fields (m:num(path), e.g. "speed"; a message without it is skipped, a
-- field that is not a number disables the rule); deceleration is measured
-- between consecutive samples.
local topic  = param("topic", "vehicle/speed")
local offset = param("offset", 0)
local field  = param("field", "f32le")     -- any m:<accessor>
local path   = params.path                 -- by name (optional): overrides field and offset
local scale  = param("scale", 1.0)         -- raw value * scale = m/s
local decel  = param("decel", 6.0)         -- m/s^2 that counts as hard braking
local max_gap = param("max_gap", 1.0)      -- s; no derivative across longer gaps

rule {
  name = param("name", "hard_brake"),
  topics = { topic },
  pre = params.pre,    -- the recorder's windows unless configured
  post = params.post,
  cooldown = param("cooldown", "10s"),
  max_per_minute = param("max_per_minute", 6),
}

local by_name = path ~= nil and path ~= ""
local last_v, last_ts
function on_message(m)
  local v
  if by_name then
    v = m:num(path)
    if v == nil then return end -- a JSON message without the member
    v = v * scale
  else
    v = m[field](m, offset) * scale
  end
  local ts = m.ts
  if v ~= v then            -- NaN: a broken sample, forget the history
    last_v = nil
    return
  end
  if last_v then
    local dt = (ts - last_ts) / 1e9
    if dt > 0 and dt <= max_gap then
      local a = (last_v - v) / dt
      if a > decel then
        trigger { reason = "hard-brake", severity = 2,
                  tag = string.format("%.1f m/s^2 from %.1f to %.1f m/s", a, last_v, v) }
      end
    end
  end
  last_v, last_ts = v, ts
end
