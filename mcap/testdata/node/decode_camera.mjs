// Decodes the foxglove.CompressedVideo and foxglove.CompressedImage
// channels of MCAP files with @mcap/support's protobuf decoder (the
// channel's FileDescriptorSet through protobufjs), after @mcap/core's
// indexed reader validated the file's CRCs, and prints per file and topic
// what the messages hold, as JSON on stdout: count, formats, frame ids,
// every timestamp in ns and the SHA-256 of the data fields in order. Used
// by the Go test TestMediaMCAPNodeDecode in cmd/edr-lite; run `npm ci` in
// this directory first.
//
// usage: node decode_camera.mjs FILE...
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";

import { McapIndexedReader } from "@mcap/core";
import { loadDecompressHandlers, protobufFromBinaryDescriptor } from "@mcap/support";

const decompressHandlers = await loadDecompressHandlers();
const cameraTypes = new Set(["foxglove.CompressedVideo", "foxglove.CompressedImage"]);

async function decode(buf) {
  const readable = {
    size: async () => BigInt(buf.byteLength),
    read: async (offset, size) => buf.subarray(Number(offset), Number(offset + size)),
  };
  const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers });
  const types = new Map(); // channel id -> protobufjs Type
  for (const ch of reader.channelsById.values()) {
    const s = reader.schemasById.get(ch.schemaId);
    if (!s || !cameraTypes.has(s.name)) continue;
    if (ch.messageEncoding !== "protobuf" || s.encoding !== "protobuf") {
      throw new Error(`${ch.topic}: ${s.name} as ${ch.messageEncoding}/${s.encoding}, want protobuf`);
    }
    types.set(ch.id, { topic: ch.topic, schema: s.name, type: protobufFromBinaryDescriptor(s.data).lookupType(s.name) });
  }
  const topics = {};
  for await (const msg of reader.readMessages({ validateCrcs: true })) {
    const t = types.get(msg.channelId);
    if (!t) continue;
    const v = t.type.toObject(t.type.decode(msg.data), { longs: String, bytes: Array });
    const o = (topics[t.topic] ??= { schema: t.schema, messages: 0, formats: [], frameIds: [], timestamps: [], logTimes: [], hash: createHash("sha256"), bytes: 0 });
    o.messages++;
    if (!o.formats.includes(v.format)) o.formats.push(v.format);
    const fid = v.frameId ?? v.frame_id;
    if (!o.frameIds.includes(fid)) o.frameIds.push(fid);
    const ts = BigInt(v.timestamp?.seconds ?? 0) * 1000000000n + BigInt(v.timestamp?.nanos ?? 0);
    o.timestamps.push(ts.toString());
    o.logTimes.push(msg.logTime.toString());
    const data = Uint8Array.from(v.data ?? []);
    o.hash.update(data);
    o.bytes += data.byteLength;
  }
  for (const o of Object.values(topics)) o.sha256 = o.hash.digest("hex"), delete o.hash;
  return topics;
}

const results = {};
for (const file of process.argv.slice(2)) {
  try {
    results[file] = { topics: await decode(new Uint8Array(await readFile(file))) };
  } catch (e) {
    results[file] = { error: String(e?.stack ?? e) };
  }
}
process.stdout.write(JSON.stringify(results));
