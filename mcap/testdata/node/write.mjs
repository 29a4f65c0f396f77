// Writes MCAP files with the reference TypeScript writer (@mcap/core) so the
// Go reader is tested on files it did not write. The messages follow a
// formula the Go test (TestReadOtherWriters) recomputes:
//   message i (0 <= i < N) on channel i % 2 ("/a" or "/b"),
//   log_time 1000 + i, publish_time 500 + i, sequence i,
//   data[j] = (i * 7 + j) % 256 for j < (i * 13) % 500.
// Every file has an attachment (calib.txt) and a metadata record (meta1);
// the variants marked extra also a second attachment (map.bin, 70000
// bytes: data[k] = k * 13 % 251) and a second metadata record named meta1
// (a name two records share), and a message sequence that jumps (message
// i has sequence 3 * i).
//
// usage: node write.mjs OUTDIR N
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

import { McapWriter } from "@mcap/core";
import zstd from "@foxglove/wasm-zstd";

const [outDir, nArg] = process.argv.slice(2);
const N = Number(nArg);
await zstd.isLoaded;

class Buf {
  chunks = [];
  size = 0n;
  async write(b) {
    this.chunks.push(b.slice());
    this.size += BigInt(b.byteLength);
  }
  position() {
    return this.size;
  }
  bytes() {
    return Buffer.concat(this.chunks);
  }
}

const noSummary = {
  useStatistics: false,
  useSummaryOffsets: false,
  useChunkIndex: false,
  useMessageIndex: false,
  useAttachmentIndex: false,
  useMetadataIndex: false,
  repeatSchemas: false,
  repeatChannels: false,
};

const variants = {
  unchunked: { useChunks: false },
  "chunked-none": { chunkSize: 4096 },
  "chunked-zstd": {
    chunkSize: 8192,
    compressChunk: (data) => ({ compression: "zstd", compressedData: zstd.compress(data) }),
  },
  "no-statistics": { chunkSize: 4096, useStatistics: false, useSummaryOffsets: false, useChunkIndex: false },
  // No summary at all (footer summary_start 0) and no indexes of any kind.
  "no-summary": {
    chunkSize: 4096,
    compressChunk: (data) => ({ compression: "zstd", compressedData: zstd.compress(data) }),
    extra: true,
    ...noSummary,
  },
  "unchunked-no-summary": { useChunks: false, extra: true, ...noSummary },
  "chunked-extra": { chunkSize: 2048, extra: true },
};

for (const [name, { extra, ...opts }] of Object.entries(variants)) {
  const out = new Buf();
  const w = new McapWriter({ writable: out, ...opts });
  await w.start({ profile: "", library: "mcap-ts" });
  const schema = await w.registerSchema({ name: "S", encoding: "jsonschema", data: new TextEncoder().encode("{}") });
  const a = await w.registerChannel({ topic: "/a", schemaId: schema, messageEncoding: "json", metadata: new Map() });
  const b = await w.registerChannel({ topic: "/b", schemaId: 0, messageEncoding: "x-raw", metadata: new Map([["k", "v"]]) });
  await w.addMetadata({ name: "meta1", metadata: new Map([["robot", "r2"]]) });
  for (let i = 0; i < N; i++) {
    const data = new Uint8Array((i * 13) % 500);
    for (let j = 0; j < data.length; j++) data[j] = (i * 7 + j) % 256;
    await w.addMessage({
      channelId: i % 2 === 0 ? a : b,
      sequence: extra ? 3 * i : i,
      logTime: BigInt(1000 + i),
      publishTime: BigInt(500 + i),
      data,
    });
    if (i === 10) {
      await w.addAttachment({ name: "calib.txt", logTime: 1n, createTime: 1n, mediaType: "text/plain", data: new Uint8Array([1, 2, 3]) });
    }
    if (extra && i === 30) {
      const map = new Uint8Array(70000);
      for (let k = 0; k < map.length; k++) map[k] = (k * 13) % 251;
      await w.addAttachment({ name: "map.bin", logTime: 1030n, createTime: 7n, mediaType: "application/octet-stream", data: map });
      await w.addMetadata({ name: "meta1", metadata: new Map([["robot", "r3"], ["site", "lab"]]) });
    }
  }
  await w.end();
  await writeFile(join(outDir, `${name}.mcap`), out.bytes());
}
