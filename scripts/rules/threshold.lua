-- threshold: any numeric field of a topic crossing a level, with
-- hysteresis. With direction "above" it fires when the value rises above
-- `high` and re-arms once it falls below `low`; with "below" it fires when
-- the value falls below `low` and re-arms above `high`. value = raw * scale
-- + bias, raw read by m:<field>(offset), or by name with `path` on a topic
-- whose type declares its fields (m:num(path), e.g. "speed" or "wheel[2]");
-- a message without the field (JSON) is skipped, a field that is not a
-- number (a string, a bool) disables the rule with a reason naming it.
local topic     = param("topic", "**")
local field     = param("field", "f32le")
local offset    = param("offset", 0)
local path      = params.path              -- by name (optional): overrides field and offset
local scale     = param("scale", 1.0)
local bias      = param("bias", 0.0)
local direction = param("direction", "above")
local high      = param("high", 0.0)
local low       = param("low", high)
local reason    = param("reason", "threshold")
local severity  = param("severity", 1)

if direction ~= "above" and direction ~= "below" then
  error("param direction must be \"above\" or \"below\", got " .. direction)
end
if low > high then
  error(string.format("param low (%g) must not exceed high (%g)", low, high))
end

rule {
  name = param("name", "threshold"),
  topics = { topic },
  pre = params.pre,    -- the recorder's windows unless configured
  post = params.post,
  cooldown = param("cooldown", "0s"),
  max_per_minute = param("max_per_minute", 30),
}

local above = direction == "above"
local armed = true
local by_name = path ~= nil and path ~= ""
function on_message(m)
  local raw
  if by_name then
    raw = m:num(path)
    if raw == nil then return end -- a JSON message without the member
  else
    raw = m[field](m, offset)
  end
  local v = raw * scale + bias
  if above then
    if armed then
      if v > high then
        armed = false
        trigger { reason = reason, severity = severity, tag = string.format("%s=%g > %g", m.topic, v, high) }
      end
    elseif v < low then
      armed = true
    end
  else
    if armed then
      if v < low then
        armed = false
        trigger { reason = reason, severity = severity, tag = string.format("%s=%g < %g", m.topic, v, low) }
      end
    elseif v > high then
      armed = true
    end
  end
end
