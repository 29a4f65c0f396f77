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

local armed = true

-- "below" is "above" on the negated value: v < low is exactly -v > -low,
-- and -(raw * scale + bias) is exactly raw * -scale + -bias (negation is
-- exact in floating point), so one comparison serves both directions and
-- the per-message code tests no direction. fire shows the value and the
-- level as configured.
local sign, op, level = 1, ">", high
if direction == "below" then
  sign, op, level = -1, "<", low
  local h = high
  high = -low
  low = -h
  scale = -scale
  bias = -bias
end

-- fire is a crossing: kept out of on_message, so that the per-message code
-- holds no table constructor (the instruction budget's hook inspects every
-- instruction of a function that does; docs/performance.md).
local function fire(m, v)
  armed = false
  trigger { reason = reason, severity = severity, tag = string.format("%s=%g %s %g", m.topic, sign * v + 0, op, level) }
end

-- on_message is chosen once, by how the field is read (the budget charges
-- every instruction a message runs): the accessor at offset, or m:num(path)
-- by name, which is nil when a JSON message lacks the member (skipped).
if path ~= nil and path ~= "" then
  function on_message(m)
    local raw = m:num(path)
    if raw == nil then return end
    local v = raw * scale + bias
    if armed then
      if v > high then fire(m, v) end
    elseif v < low then
      armed = true
    end
  end
else
  function on_message(m)
    local v = m[field](m, offset) * scale + bias
    if armed then
      if v > high then fire(m, v) end
    elseif v < low then
      armed = true
    end
  end
end
