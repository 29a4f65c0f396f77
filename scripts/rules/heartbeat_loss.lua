-- heartbeat_loss: fires when a topic has been silent for longer than
-- `timeout`. Every topic matching the glob is watched from its first
-- message; a topic named without glob characters is also expected from the
-- moment the rule first sees time pass. A lost topic fires once and is
-- re-armed by its next message. Silence is what the recorder sees, so the
-- rule runs on capture time, and the dump is anchored at the lost topic's
-- last message: it holds the window before the silence, not a window of
-- nothing after it.
local topic   = param("topic", "**")
local timeout = param("timeout", 0.5)    -- seconds
local tick    = param("tick", "100ms")   -- how often silence is checked

rule {
  name = param("name", "heartbeat_loss"),
  topics = { topic },
  pre = params.pre,    -- the recorder's windows unless configured
  post = params.post,
  tick = tick,
  time = "capture",
  max_per_minute = param("max_per_minute", 10),
}

local limit = timeout * 1e9
local last = {}   -- topic -> message time of its last message
local seen = {}   -- topic -> true once a message came
local lost = {}   -- topic -> true once reported
local exact = not string.find(topic, "[%*%?]")

function on_message(m)
  local t = m.topic
  if lost[t] then
    log("heartbeat back", t)
    lost[t] = nil
  end
  last[t] = m.ts
  seen[t] = true
end

function on_tick(now)
  if exact and last[topic] == nil then
    last[topic] = now    -- expected from the first tick on
  end
  for t, ts in pairs(last) do
    if not lost[t] and now - ts > limit then
      lost[t] = true
      -- anchored at the topic's last message (a topic never seen: now)
      trigger { reason = "heartbeat-loss", severity = 2, at = seen[t] and ts or nil,
                tag = string.format("%s silent for %.0f ms", t, (now - ts) / 1e6) }
    end
  end
end
