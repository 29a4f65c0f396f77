-- heartbeat_loss: fires when a topic has been silent for longer than
-- `timeout`. Every topic matching the glob is watched from its first
-- message; a topic named without glob characters is also expected from the
-- moment the rule first sees time pass. A lost topic fires once and is
-- re-armed by its next message.
local topic   = param("topic", "**")
local timeout = param("timeout", 0.5)    -- seconds
local tick    = param("tick", "100ms")   -- how often silence is checked

rule {
  name = param("name", "heartbeat_loss"),
  topics = { topic },
  pre = param("pre", "30s"),
  post = param("post", "5s"),
  tick = tick,
  max_per_minute = param("max_per_minute", 10),
}

local limit = timeout * 1e9
local last = {}   -- topic -> message time of its last message
local lost = {}   -- topic -> true once reported
local exact = not string.find(topic, "[%*%?]")

function on_message(m)
  local t = m.topic
  if lost[t] then
    log("heartbeat back", t)
    lost[t] = nil
  end
  last[t] = m.ts
end

function on_tick(now)
  if exact and last[topic] == nil then
    last[topic] = now    -- expected from the first tick on
  end
  for t, ts in pairs(last) do
    if not lost[t] and now - ts > limit then
      lost[t] = true
      trigger { reason = "heartbeat-loss", severity = 2,
                tag = string.format("%s silent for %.0f ms", t, (now - ts) / 1e6) }
    end
  end
end
