// Reads MCAP files with the reference TypeScript reader (@mcap/core) and
// prints, per file, what it found as JSON on stdout. Used by the Go test
// TestNodeReader in mcap; run `npm ci` in this directory first. A file
// without a summary has "indexed": null and "notIndexed": true (the
// indexed reader needs a summary); the stream reader reads every file.
// "error" holds what either reader threw (the other's result is given).
//
// usage: node validate.mjs FILE...
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";

import { crc32 } from "@foxglove/crc";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { loadDecompressHandlers } from "@mcap/support";

const decompressHandlers = await loadDecompressHandlers();

// jsonMessages counts, per topic, the messages of json channels that
// JSON.parse reads as an object, and those it does not.
function jsonMessages() {
  const m = {};
  const text = new TextDecoder("utf-8", { fatal: true });
  return {
    add(topic, channel, data) {
      if (channel.messageEncoding !== "json") return;
      const s = (m[topic] ??= { ok: 0, bad: 0 });
      try {
        const v = JSON.parse(text.decode(data));
        if (v !== null && typeof v === "object") s.ok++;
        else s.bad++;
      } catch {
        s.bad++;
      }
    },
    json() {
      return m;
    },
  };
}

// topicStats gathers per topic the messages, bytes and SHA-256 of the
// payloads in order and, when given, the sequence numbers in order
// ("seqs": comma-separated).
function topicStats() {
  const m = new Map();
  return {
    add(topic, data, seq) {
      let s = m.get(topic);
      if (!s) {
        s = { messages: 0, bytes: 0, hash: createHash("sha256"), seqs: [] };
        m.set(topic, s);
      }
      s.messages++;
      s.bytes += data.byteLength;
      s.hash.update(data);
      if (seq !== undefined) s.seqs.push(seq);
    },
    json() {
      const out = {};
      for (const [k, s] of m) {
        out[k] = { messages: s.messages, bytes: s.bytes, sha256: s.hash.digest("hex") };
        if (s.seqs.length > 0) out[k].seqs = s.seqs.join(",");
      }
      return out;
    },
  };
}

// attachment describes an Attachment record (data as its SHA-256).
function attachment(a) {
  return {
    name: a.name,
    mediaType: a.mediaType,
    logTime: a.logTime.toString(),
    createTime: a.createTime.toString(),
    size: a.data.byteLength,
    sha256: createHash("sha256").update(a.data).digest("hex"),
  };
}

async function indexed(buf) {
  const readable = {
    size: async () => BigInt(buf.byteLength),
    read: async (offset, size) => buf.subarray(Number(offset), Number(offset + size)),
  };
  const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers });
  const topics = topicStats();
  const json = jsonMessages();
  for await (const msg of reader.readMessages({ validateCrcs: true })) {
    const ch = reader.channelsById.get(msg.channelId);
    topics.add(ch.topic, msg.data);
    json.add(ch.topic, ch, msg.data);
  }
  const metadata = [];
  for await (const md of reader.readMetadata()) {
    metadata.push({ name: md.name, kv: Object.fromEntries(md.metadata) });
  }
  const attachments = [];
  for await (const a of reader.readAttachments({ validateCrcs: true })) {
    attachments.push(attachment(a));
  }
  // DataEnd sits just before the summary; its CRC covers every byte before it.
  const dataEndAt = Number(reader.footer.summaryStart) - (1 + 8 + 4);
  const computed = crc32(buf.subarray(0, dataEndAt));
  const stats = reader.statistics;
  return {
    profile: reader.header.profile,
    library: reader.header.library,
    topics: topics.json(),
    metadata,
    attachments,
    chunks: reader.chunkIndexes.map((c) => c.compression),
    statistics: stats && {
      messageCount: Number(stats.messageCount),
      channelCount: stats.channelCount,
      chunkCount: stats.chunkCount,
      metadataCount: stats.metadataCount,
      attachmentCount: stats.attachmentCount,
      messageStartTime: stats.messageStartTime.toString(),
      messageEndTime: stats.messageEndTime.toString(),
    },
    schemas: Object.fromEntries(
      [...reader.channelsById.values()].map((c) => [c.topic, reader.schemasById.get(c.schemaId)?.name ?? ""]),
    ),
    // Every channel with its message encoding and Schema record (name,
    // encoding, SHA-256 of its data), in channel id order.
    channels: [...reader.channelsById.values()]
      .sort((a, b) => a.id - b.id)
      .map((c) => {
        const s = reader.schemasById.get(c.schemaId);
        return {
          topic: c.topic,
          messageEncoding: c.messageEncoding,
          schemaId: c.schemaId,
          schema: s && {
            name: s.name,
            encoding: s.encoding,
            sha256: createHash("sha256").update(s.data).digest("hex"),
          },
          metadata: Object.fromEntries(c.metadata),
        };
      }),
    json: json.json(),
    dataSectionCrcOk: reader.dataSectionCrc === computed,
  };
}

function stream(buf) {
  const reader = new McapStreamReader({ decompressHandlers, validateCrcs: true });
  reader.append(buf);
  const channels = new Map();
  const topics = topicStats();
  const kinds = {};
  const metadata = [];
  const attachments = [];
  let rec;
  while ((rec = reader.nextRecord())) {
    kinds[rec.type] = (kinds[rec.type] ?? 0) + 1;
    if (rec.type === "Channel") channels.set(rec.id, rec.topic);
    if (rec.type === "Message") topics.add(channels.get(rec.channelId), rec.data, rec.sequence);
    if (rec.type === "Metadata") metadata.push({ name: rec.name, kv: Object.fromEntries(rec.metadata) });
    if (rec.type === "Attachment") attachments.push(attachment(rec));
  }
  if (!reader.done()) throw new Error("stream reader did not reach the end of the file");
  return { topics: topics.json(), records: kinds, metadata, attachments };
}

const results = {};
for (const file of process.argv.slice(2)) {
  const buf = new Uint8Array(await readFile(file));
  // An error of either reader is "error"; the other reader's result is
  // still given.
  const r = { indexed: null, notIndexed: false, stream: null };
  const errors = [];
  try {
    r.indexed = await indexed(buf);
  } catch (err) {
    if (String(err).includes("File is not indexed")) r.notIndexed = true;
    else errors.push(String(err?.stack ?? err));
  }
  try {
    r.stream = stream(buf);
  } catch (err) {
    errors.push(String(err?.stack ?? err));
  }
  if (errors.length > 0) r.error = errors.join("\n");
  results[file] = r;
}
process.stdout.write(JSON.stringify(results, null, 1) + "\n");
