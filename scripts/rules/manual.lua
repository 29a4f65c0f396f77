-- manual: a button or command topic. A message fires when its byte at
-- `offset` is non-zero (pressed) and the previous one was zero (released),
-- so a held button fires once; an empty message is a press-and-release
-- command. A message longer than offset+1 bytes carries a note in the rest
-- of its payload, passed on as the trigger's tag.
local topic  = param("topic", "driver/button")
local offset = param("offset", 0)

rule {
  name = param("name", "manual"),
  topics = { topic },
  pre = params.pre,    -- the recorder's windows unless configured
  post = params.post,
  cooldown = param("cooldown", "2s"),
}

local pressed = false
function on_message(m)
  local size = m.size
  if size == 0 then
    pressed = false
    trigger { reason = "manual", severity = 3, tag = "command" }
    return
  end
  local down = m:u8(offset) ~= 0
  if down and not pressed then
    local note = "button"
    if size > offset + 1 then
      note = m:str(offset + 1, size - offset - 1)
    end
    trigger { reason = "manual", severity = 3, tag = note }
  end
  pressed = down
end
