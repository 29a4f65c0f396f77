-- rate_anomaly: fires when the number of messages on the matching topics in
-- a window leaves the band [min, max]. The first window (partial: the rule
-- starts mid-window) is not judged.
local topic  = param("topic", "**")
local window = param("window", 1.0)     -- seconds
local min    = param("min", 0)          -- messages per window
local max    = param("max", 1e12)

rule {
  name = param("name", "rate_anomaly"),
  topics = { topic },
  pre = params.pre,    -- the recorder's windows unless configured
  post = params.post,
  tick = window,
  cooldown = param("cooldown", "0s"),
  max_per_minute = param("max_per_minute", 6),
}

local count = 0
local first = true
function on_message(m)
  count = count + 1
end

function on_tick(now)
  local n = count
  count = 0
  if first then
    first = false
    return
  end
  if n < min or n > max then
    trigger { reason = "rate-anomaly", severity = 1,
              tag = string.format("%d messages in %gs, band %g..%g", n, window, min, max) }
  end
end
