// Decodes every message of every channel of MCAP files with the
// ecosystem's own decoders, as Foxglove does, and prints per file and topic
// what it decoded as JSON on stdout. Used by the Go tests TestNodeDecodesDemo
// and TestNodeDecodesLayoutProperty in cmd/edr-lite; run `npm ci` in this
// directory first.
//
//   protobuf + protobuf schema: @mcap/support's protobufFromBinaryDescriptor
//   json (any schema):          JSON.parse
//   cdr + ros2msg:              @foxglove/rosmsg (parse, ros2) and
//                               @foxglove/rosmsg2-serialization (MessageReader)
//
// Any other encoding, and any message a decoder throws on, is an error the
// test sees. Bytes come out in base64, 64-bit integers as strings.
//
// usage: node decode.mjs FILE...
import { readFile } from "node:fs/promises";

import { McapIndexedReader } from "@mcap/core";
import { parse as parseRosMsg } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";
import { loadDecompressHandlers, protobufFromBinaryDescriptor } from "@mcap/support";

const decompressHandlers = await loadDecompressHandlers();
const text = new TextDecoder("utf-8", { fatal: true });

// decoderOf builds the decoder of a channel from its Schema record.
function decoderOf(channel, schema) {
  switch (channel.messageEncoding) {
    case "protobuf": {
      if (schema?.encoding !== "protobuf") throw new Error(`protobuf channel with schema encoding ${schema?.encoding}`);
      const root = protobufFromBinaryDescriptor(schema.data);
      const type = root.lookupType(schema.name);
      return (data) =>
        type.toObject(type.decode(data), { longs: String, enums: String, bytes: String, defaults: true });
    }
    case "json":
      return (data) => JSON.parse(text.decode(data));
    case "cdr": {
      if (schema?.encoding !== "ros2msg") throw new Error(`cdr channel with schema encoding ${schema?.encoding}`);
      const reader = new MessageReader(parseRosMsg(text.decode(schema.data), { ros2: true }));
      return (data) => reader.readMessage(data);
    }
    default:
      throw new Error(`no decoder for message encoding ${channel.messageEncoding}`);
  }
}

// plain turns what the decoders return into JSON: typed arrays as arrays,
// bigints as strings.
function plain(_key, v) {
  if (typeof v === "bigint") return v.toString();
  if (ArrayBuffer.isView(v)) return Array.from(v, (x) => (typeof x === "bigint" ? x.toString() : x));
  return v;
}

async function decodeFile(buf) {
  const readable = {
    size: async () => BigInt(buf.byteLength),
    read: async (offset, size) => buf.subarray(Number(offset), Number(offset + size)),
  };
  const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers });
  const decoders = new Map();
  const topics = {};
  for await (const msg of reader.readMessages({ validateCrcs: true })) {
    const ch = reader.channelsById.get(msg.channelId);
    const schema = reader.schemasById.get(ch.schemaId);
    const t = (topics[ch.topic] ??= {
      messageEncoding: ch.messageEncoding,
      schemaName: schema?.name ?? "",
      schemaEncoding: schema?.encoding ?? "",
      messages: 0,
      errors: [],
      decoded: [],
    });
    t.messages++;
    try {
      let dec = decoders.get(ch.id);
      if (!dec) {
        dec = decoderOf(ch, schema);
        decoders.set(ch.id, dec);
      }
      t.decoded.push(dec(msg.data));
    } catch (err) {
      if (t.errors.length < 5) t.errors.push(`message ${t.messages}: ${err}`);
      t.decoded.push(null);
    }
  }
  return { topics };
}

const results = {};
for (const file of process.argv.slice(2)) {
  const buf = new Uint8Array(await readFile(file));
  try {
    results[file] = await decodeFile(buf);
  } catch (err) {
    results[file] = { error: String(err?.stack ?? err) };
  }
}
process.stdout.write(JSON.stringify(results, plain) + "\n");
