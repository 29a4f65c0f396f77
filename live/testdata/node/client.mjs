// A Foxglove WebSocket client made of the ecosystem's own parts: the
// protocol's reference client (@foxglove/ws-protocol's FoxgloveClient),
// Node's WebSocket, and the decoders Foxglove uses (as
// mcap/testdata/node/decode.mjs does for MCAP files):
//
//   protobuf + protobuf schema (base64 FileDescriptorSet): @mcap/support
//   json (any schema):                                     JSON.parse
//   cdr + ros2msg:                                         @foxglove/rosmsg + @foxglove/rosmsg2-serialization
//
// It connects to URL, sets the history parameter, subscribes to every
// channel advertised (also those advertised later), decodes every message
// it receives for SECONDS seconds, and prints on stdout, as JSON, per topic:
// the channel, the messages received with their timestamps, decoding
// errors, and what the server told it it lost. With --publish it also
// advertises a ROS 2 topic (cdr + ros2msg) and a JSON mark, publishes
// messages on them (encoded by @foxglove/rosmsg2-serialization's
// MessageWriter) and receives them back like any topic. Used by
// cmd/edr-lite's live_e2e_test.go; run `npm ci` here first.
//
// usage: node --experimental-websocket client.mjs URL SECONDS [--history S] [--publish N]
import wsProtocol from "@foxglove/ws-protocol";
import { parse as parseRosMsg } from "@foxglove/rosmsg";
import { MessageReader, MessageWriter } from "@foxglove/rosmsg2-serialization";
import { protobufFromBinaryDescriptor } from "@mcap/support";

const { FoxgloveClient } = wsProtocol;
const [url, secondsArg, ...rest] = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = rest.indexOf(name);
  return i >= 0 ? Number(rest[i + 1]) : dflt;
};
const history = opt("--history", -1);
const publish = opt("--publish", 0);
const text = new TextDecoder("utf-8", { fatal: true });

const levelMsg = `builtin_interfaces/Time stamp
float64 level
string label
int32[] counts
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
`;

// decoderOf builds a channel's decoder from its advertisement.
function decoderOf(ch) {
  switch (ch.encoding) {
    case "protobuf": {
      if (ch.schemaEncoding && ch.schemaEncoding !== "protobuf") throw new Error(`protobuf channel with schema encoding ${ch.schemaEncoding}`);
      const root = protobufFromBinaryDescriptor(Buffer.from(ch.schema, "base64"));
      const type = root.lookupType(ch.schemaName);
      return (data) => type.toObject(type.decode(data), { longs: String, enums: String, bytes: String, defaults: true });
    }
    case "json":
      return (data) => JSON.parse(text.decode(data));
    case "cdr": {
      if (ch.schemaEncoding !== "ros2msg") throw new Error(`cdr channel with schema encoding ${ch.schemaEncoding}`);
      const reader = new MessageReader(parseRosMsg(ch.schema, { ros2: true }));
      return (data) => reader.readMessage(data);
    }
    default:
      throw new Error(`no decoder for message encoding ${ch.encoding}`);
  }
}

function plain(_key, v) {
  if (typeof v === "bigint") return v.toString();
  if (ArrayBuffer.isView(v)) return Array.from(v, (x) => (typeof x === "bigint" ? x.toString() : x));
  return v;
}

const out = { serverInfo: null, topics: {}, lost: {}, statuses: [], errors: [], closed: null, published: 0, firstTimeNs: null };
const subs = new Map(); // subscription id -> { topic, decode }

const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
const client = new FoxgloveClient({ ws });

client.on("error", (err) => out.errors.push(String(err?.message ?? err)));
client.on("close", (ev) => {
  out.closed = { code: ev.code, reason: ev.reason };
});
client.on("serverInfo", (info) => {
  out.serverInfo = info;
  process.stderr.write("connected\n"); // the test waits for it
  if (history >= 0) client.setParameters([{ name: "edr-lite.history_s", value: history }], "history");
  if (publish > 0) startPublishing(info);
});
client.on("time", ({ timestamp }) => {
  out.firstTimeNs ??= timestamp.toString();
});
client.on("status", (s) => {
  out.statuses.push(s);
  const m = /^edr-lite\.lost:(.*)$/.exec(s.id ?? "");
  if (m) out.lost[m[1]] = Number(/: (\d+) messages not sent/.exec(s.message)?.[1] ?? NaN);
});
client.on("advertise", (chs) => {
  for (const ch of chs) {
    const t = (out.topics[ch.topic] ??= { channel: null, messages: 0, ns: [], decoded: [], decodeErrors: [] });
    t.channel = { encoding: ch.encoding, schemaName: ch.schemaName, schemaEncoding: ch.schemaEncoding ?? "", schemaBytes: ch.schema.length };
    let decode;
    try {
      decode = decoderOf(ch);
    } catch (err) {
      t.decodeErrors.push(`channel ${ch.id}: ${err}`);
      continue;
    }
    subs.set(client.subscribe(ch.id), { topic: ch.topic, decode });
  }
});
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const sub = subs.get(subscriptionId);
  const t = sub && out.topics[sub.topic];
  if (!t) {
    out.errors.push(`message for unknown subscription ${subscriptionId}`);
    return;
  }
  t.messages++;
  t.ns.push(timestamp.toString());
  const topic = sub.topic;
  try {
    const v = sub.decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    if (t.decoded.length < 3 || topic === "vehicle/speed" || topic.startsWith("operator/")) t.decoded.push(v);
  } catch (err) {
    if (t.decodeErrors.length < 5) t.decodeErrors.push(`message ${t.messages}: ${err}`);
  }
});

// startPublishing advertises operator/level (ROS 2) and operator/mark
// (JSON) and publishes `publish` levels, then one mark.
function startPublishing(info) {
  if (!info.capabilities.includes("clientPublish")) {
    out.errors.push("server has no clientPublish capability");
    return;
  }
  const writer = new MessageWriter(parseRosMsg(levelMsg, { ros2: true }));
  const level = client.advertise({ topic: "operator/level", encoding: "cdr", schemaName: "edr_test/msg/Level", schemaEncoding: "ros2msg", schema: levelMsg });
  const mark = client.advertise({ topic: "operator/mark", encoding: "json", schemaName: "edr.live.Mark", schemaEncoding: "jsonschema",
    schema: JSON.stringify({ type: "object", properties: { reason: { type: "string" } } }) });
  let i = 0;
  const timer = setInterval(() => {
    if (i === publish) {
      clearInterval(timer);
      client.sendMessage(mark, new TextEncoder().encode(JSON.stringify({ reason: "cone on the road" })));
      out.published++;
      return;
    }
    // an ASCII label: MessageWriter 3.1.0 sizes strings in UTF-16 units, cutting non-ASCII ones
    const msg = { stamp: { sec: 1800000000 + i, nanosec: i * 1000 }, level: i * 0.5 - 1, label: "tank " + i,
      counts: Int32Array.from({ length: i % 4 }, (_, j) => j - i) };
    client.sendMessage(level, writer.writeMessage(msg));
    out.published++;
    i++;
  }, 20);
}

setTimeout(() => {
  for (const t of Object.values(out.topics)) t.decodedCount = t.decoded.length;
  client.close();
  process.stdout.write(JSON.stringify(out, plain) + "\n", () => process.exit(0));
}, Number(secondsArg) * 1000);
