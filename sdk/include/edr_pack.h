/*
 * edr_pack.h: the C API of libedrpack, edr-lite's pack-sdk. C99; usable
 * from C++ (extern "C"). Reference: docs/sdk.md (every function beside the
 * DataTools pack-sdk name it stands for, ownership, errors, threads, build).
 *
 * Read pack dumps (and MCAP dumps, through the same calls) frame by frame,
 * from a file, memory, a file descriptor or a read callback; build frames and
 * write pack files that `edr-lite verify` accepts.
 *
 * Handles. Every object is an opaque 64-bit handle (edr_pack for an open
 * file, read or write; edr_frame for a frame). 0 is never a valid handle. A
 * handle that is unknown, closed, destroyed or of the wrong kind gives
 * EDR_EBADHANDLE; a closed handle is never reused.
 *
 * Ownership. A pointer returned through a `const T **` parameter is
 * BORROWED: it belongs to the handle and stays valid until the next call on
 * that handle (or on the frame handle edr_pack_read_frame gave, which belongs
 * to the file handle), or its close. Never free it. A pointer returned
 * through a non-const `T **` parameter is OWNED by the caller, one allocation
 * per call, released with edr_free (which refuses, with EDR_EINVAL, any
 * pointer the library did not hand out or has already freed). Owned arrays
 * whose elements point at message bytes (edr_frame_blocks) own the array,
 * not the bytes: those are borrowed from the frame.
 *
 * Errors. Functions return EDR_OK (0), EDR_EOF (1, end of frames) or a
 * negative EDR_E* code. edr_last_error(handle) gives the message of the last
 * failure on that handle (with path and byte offset for a damaged file, as
 * `edr-lite verify` prints them), edr_error_offset(handle) the offset alone;
 * edr_last_error(0) gives the last failure of this thread that had no handle
 * (an open, a create, a bad handle).
 *
 * Threads. A handle is used by one thread at a time; different handles may
 * be used on different threads at once (two readers of one file are fine).
 * The library checks: a call on a handle another thread is inside returns
 * EDR_EBUSY without touching it. A frame handle from edr_pack_read_frame
 * shares its file handle's lock.
 */
#ifndef EDR_PACK_H
#define EDR_PACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2 (2026-12): types (edr_type; edr_message.type, .seq; edr_topic.first_type),
 * filters, typed writing, attachments, the _with openers of memory, fd and
 * callback, layouts. edr_message and edr_topic grew: rebuild against this header. */
#define EDR_PACK_API_VERSION 2

/* Return codes. */
#define EDR_OK 0
#define EDR_EOF 1            /* no more frames: not an error */
#define EDR_EINVAL (-1)      /* a bad argument: NULL pointer, bad value, wrong use */
#define EDR_EBADHANDLE (-2)  /* unknown, closed or destroyed handle, or the wrong kind */
#define EDR_EIO (-3)         /* the operating system refused: open, read, write, fsync */
#define EDR_ECORRUPT (-4)    /* the file is damaged: see edr_last_error, edr_error_offset */
#define EDR_EFORMAT (-5)     /* not a pack or MCAP file, or a newer format version */
#define EDR_ENOTSUP (-6)     /* not possible on this handle (seek on a stream, tell on MCAP) */
#define EDR_EBUSY (-7)       /* another thread is inside a call on this handle */
#define EDR_ENOMATCH (-8)    /* a filter selects no topic the file holds: see edr_last_error */

/* Frame types (FrameV2Proto.FrameType). */
#define EDR_FRAME_BUNDLE 0   /* all messages emitted together, one time */
#define EDR_FRAME_FREESYNC 1 /* one period; messages carry their own times */

/* Compression of written frames (per frame; stored raw when it does not shrink). */
#define EDR_COMPRESS_NONE 0
#define EDR_COMPRESS_LZ4 1
#define EDR_COMPRESS_ZSTD 2

/* File formats (edr_summary.format). */
#define EDR_FORMAT_PACK 1
#define EDR_FORMAT_MCAP 2

typedef uint64_t edr_pack;  /* an open file: read or write */
typedef uint64_t edr_frame; /* a frame */

/* A byte range. */
typedef struct edr_bytes {
	const uint8_t *data;
	size_t len;
} edr_bytes;

/* A topic's type: what its messages are (MCAP's Channel.message_encoding
 * and Schema record). docs/schemas.md lists the encodings edr-lite decodes. */
typedef struct edr_type {
	const char *message_encoding; /* "protobuf", "json", "cdr", "ros1", "flatbuffer", "cbor", "x-edr-packed",
	                               * "x-edr-raw" (opaque bytes) or another; writing: NULL or "" is x-edr-raw */
	const char *schema_name;      /* the type's name ("vehicle.State"); "" (or NULL, writing) when none */
	const char *schema_encoding;  /* "protobuf", "jsonschema", "ros2msg", "ros2idl", "omgidl", "ros1msg",
	                               * "flatbuffer", "x-edr-layout"; "" (or NULL) when there is no schema */
	const uint8_t *schema_data;   /* the schema's bytes (a layout's source, a FileDescriptorSet, ...); NULL when none */
	size_t schema_len;
} edr_type;

/* One message of a frame (FrameV2Proto.Message). Borrowed from the frame. */
typedef struct edr_message {
	const char *name;     /* NUL-terminated; name_len bytes before the NUL */
	size_t name_len;
	const char *channel;  /* NUL-terminated; "" when none */
	size_t channel_len;
	const uint8_t *meta;  /* the message's serialized meta; NULL when empty */
	size_t meta_len;
	const uint8_t *data;  /* its data block; NULL when it has none or the frame was read without data */
	size_t data_len;
	int64_t gen_ts;       /* producer time, ns since the UNIX epoch; 0 = unknown */
	int64_t done_ts;      /* capture time; 0 = unknown */
	int64_t time_ns;      /* the time edr-lite orders by: done_ts, else gen_ts, else the frame time */
	int32_t data_index;   /* the frame's data block of this message; -1 = none */
	int32_t has_seq;      /* 1: seq is the producer's sequence number of the message; 0: none recorded */
	uint64_t seq;
	/* The message's type, as the file says at this message (a topic's type
	 * can change inside a file); borrowed from the reader until
	 * edr_pack_close (the same pointer for every message of a type). NULL
	 * for the messages of a frame you built. Never NULL from a reader:
	 * an untyped topic reads as x-edr-raw. */
	const edr_type *type;
} edr_message;

/* What edr_pack_read_frame read. Everything is borrowed from the file handle. */
typedef struct edr_frame_view {
	edr_frame frame;      /* the frame, for the edr_frame_* calls; belongs to the file handle */
	uint64_t id;
	int64_t time_ns;      /* the frame's (start) time */
	int64_t done_ns;      /* its end time; 0 = unset */
	int32_t type;         /* EDR_FRAME_BUNDLE or EDR_FRAME_FREESYNC */
	int32_t reserved;
	int64_t offset;       /* byte offset of the frame record; -1 for MCAP */
	size_t n_messages;
	const edr_message *messages;
} edr_frame_view;

/* One message of a topic, as edr_frame_blocks returns them (SingleBlock). */
typedef struct edr_block {
	int64_t gen_ts;
	int64_t done_ts;
	const uint8_t *meta;
	size_t meta_len;
	const uint8_t *data;  /* NULL when the message has no data */
	size_t data_len;
} edr_block;

/* A file's topic (edr_pack_topics). */
typedef struct edr_topic {
	const char *name;
	const char *channel;
	const char *type;     /* the type's name (first_type.schema_name); "" when unknown */
	uint64_t messages;
	edr_type first_type;  /* the topic's type (its first in the file); raw bytes (x-edr-raw) when untyped */
	size_t n_types;       /* how many types it has in the file (more than 1: a producer restarted with another) */
} edr_topic;

/* Which messages the reads of a handle yield (edr_pack_set_filter). All
 * zero: every message. Topics are globs as `edr-lite cat --topics` takes
 * them (path.Match syntax, tried against "name#channel" and against the
 * name alone: "vehicle/speed" selects "vehicle/speed#left"). The time window
 * is inclusive at both ends, as `cat --from --to` (mcap's end_time is
 * exclusive). */
typedef struct edr_filter {
	const char *const *topics;  /* n_topics globs: a message is selected when its topic matches one (none: every topic) */
	size_t n_topics;
	const char *const *exclude; /* n_exclude globs: ... and matches none of these */
	size_t n_exclude;
	int64_t start_ns;           /* with EDR_FILTER_START: messages with time_ns >= start_ns */
	int64_t end_ns;             /* with EDR_FILTER_END: messages with time_ns <= end_ns */
	int32_t flags;              /* EDR_FILTER_START | EDR_FILTER_END: which bounds are set */
	int32_t reserved;           /* 0 */
} edr_filter;

#define EDR_FILTER_START 1
#define EDR_FILTER_END 2

/* A file stored with a dump (edr_pack_attachments, edr_pack_add_attachment). */
typedef struct edr_attachment {
	const char *name;       /* "calibration.yaml" */
	const char *media_type; /* "application/yaml"; "" when unknown */
	int64_t log_ns;         /* the time it belongs to; 0 when unknown */
	int64_t create_ns;      /* when it was made; 0 when unknown */
	const uint8_t *data;
	size_t len;
} edr_attachment;

/* What a file holds (edr_pack_summary). */
typedef struct edr_summary {
	int32_t format;       /* EDR_FORMAT_PACK or EDR_FORMAT_MCAP */
	int32_t indexed;      /* 1 when the file has a usable index / summary */
	uint64_t frames;      /* pack: frames; MCAP: messages (each reads as a frame) */
	uint64_t messages;
	int64_t first_ns;
	int64_t last_ns;
	int64_t created_ns;   /* pack header; 0 when unknown */
	const char *writer;   /* borrowed from the handle */
} edr_summary;

/* Options of edr_pack_open_read_with; NULL means all zero. */
typedef struct edr_read_options {
	int32_t skip_damaged; /* 1: read past damage (pack files): a damaged frame or type section is
	                       * skipped, the reads go on at the next intact record (as edr-lite recover
	                       * resynchronises), edr_pack_skipped counts what was skipped. 0: a damaged
	                       * frame's error stays until a seek. MCAP files: no effect (damage stops the
	                       * reads; salvage them with edr-lite recover). */
	int32_t reserved;
} edr_read_options;

/* What the reads of a handle opened with skip_damaged passed over (edr_pack_skipped). */
typedef struct edr_skipped {
	uint64_t regions;     /* damaged regions skipped */
	uint64_t frames;      /* frames lost in them */
	uint64_t bytes;       /* bytes skipped */
	uint64_t types;       /* type sections left out (their topics read as untyped from there) */
	int64_t first_offset; /* where the first region starts; -1 when none */
	int64_t reserved;
} edr_skipped;

/* Options of edr_pack_open_write; NULL means all zero. */
typedef struct edr_write_options {
	int32_t compression;  /* EDR_COMPRESS_* */
	int32_t reserved;
	const char *writer;   /* the producing program, in the file header; NULL = "libedrpack" */
	int64_t created_ns;   /* 0 = now */
} edr_write_options;

/* A read callback: fill buf with up to len bytes; return how many (> 0),
 * 0 at the end of the stream, < 0 on error. Called on the thread that called
 * edr_pack_read_frame; must not call the library on the same handle. buf
 * is the library's (malloc'd, at most 1 MiB a call), valid for this call only. */
typedef ptrdiff_t (*edr_read_fn)(void *user, void *buf, size_t len);

/* ---- general ---- */

const char *edr_version(void);
/* The message of the last failure on h (borrowed until the next call on h);
 * h = 0: of this thread's last failure without a handle. "" when none. */
const char *edr_last_error(uint64_t h);
/* The byte offset of the damage behind h's last failure, -1 when none. */
int64_t edr_error_offset(uint64_t h);
/* Releases an owned buffer. NULL is fine; anything else not owned is EDR_EINVAL. */
int edr_free(void *p);

/* ---- reading ---- */

/* Opens a pack or MCAP file (mapped read-only). */
int edr_pack_open_read(const char *path, edr_pack *out);
/* edr_pack_open_read with options (NULL: as edr_pack_open_read). */
int edr_pack_open_read_with(const char *path, const edr_read_options *opts, edr_pack *out);
/* What the reads so far skipped (a handle opened with skip_damaged; zeros otherwise). */
int edr_pack_skipped(edr_pack r, edr_skipped *out);
/* Reads a pack or MCAP file held in memory; buf must stay valid and
 * unchanged until edr_pack_close. */
int edr_pack_open_mem(const void *buf, size_t len, edr_pack *out);
/* Reads a pack file from a blocking file descriptor (a pipe, a socket, a
 * file) front to back. The library does not close fd. */
int edr_pack_open_fd(int fd, edr_pack *out);
/* Reads a pack file from a callback, front to back. */
int edr_pack_open_callback(edr_read_fn fn, void *user, edr_pack *out);
/* The openers above with options (NULL: all zero): skip_damaged reads past
 * damage in memory and in streams as in files. */
int edr_pack_open_mem_with(const void *buf, size_t len, const edr_read_options *opts, edr_pack *out);
int edr_pack_open_fd_with(int fd, const edr_read_options *opts, edr_pack *out);
int edr_pack_open_callback_with(edr_read_fn fn, void *user, const edr_read_options *opts, edr_pack *out);
/* Reads the next frame (with its data when with_data != 0) into *view.
 * EDR_EOF after the last. view and all it points to are borrowed until the
 * next call on r. MCAP files read one message per frame, in log-time order. */
int edr_pack_read_frame(edr_pack r, int with_data, edr_frame_view *view);
/* The offset of the next frame (pack files and streams). */
int edr_pack_tell(edr_pack r, int64_t *offset);
/* Moves to a frame offset from edr_pack_tell or edr_frame_view.offset (pack files). */
int edr_pack_seek(edr_pack r, int64_t offset);
/* Moves so that the reads that follow yield exactly the messages whose
 * time_ns is >= time_ns: pack files go to the first frame holding one (through
 * the index) and leave out of every frame read the messages before time_ns (a
 * frame left with none is skipped) until edr_pack_seek; MCAP: the first
 * message with log time >= time_ns, in log-time order. */
int edr_pack_seek_time(edr_pack r, int64_t time_ns);
/* What the file holds (files and memory; not streams). */
int edr_pack_summary(edr_pack r, edr_summary *out);
/* The file's topics: an owned array of *n topics (strings inside it); edr_free(*topics). */
int edr_pack_topics(edr_pack r, edr_topic **topics, size_t *n);
/* Sets which messages the reads that follow yield (f copied; NULL: every
 * message again) and moves to the first of them: edr_pack_read_frame's view
 * then lists only the messages the filter selects (a frame with none is
 * skipped; frames that cannot hold one are not decoded; the reads end when
 * no later frame can), edr_pack_read_records copies only them. It stays
 * until the next edr_pack_set_filter; edr_pack_seek and edr_pack_seek_time
 * move within it. Files (pack, MCAP) and memory: EDR_ENOMATCH when the
 * topics select none of the file's topics (the message lists what the file
 * holds). Streams: applied from the current position, nothing checked.
 * The edr_frame_* calls on the view's frame see the whole frame as read. */
int edr_pack_set_filter(edr_pack r, const edr_filter *f);
/* Copies the data of the next messages the filter selects into buf, one
 * record of record_size bytes each (a message's first record_size bytes:
 * bytes after a layout's end are ignored), until cap records are copied
 * (EDR_OK) or the reads end (EDR_EOF); *n says how many were copied (with
 * EDR_EOF too), times[i] (times may be NULL) each record's time_ns. One call
 * reads as many frames as it needs (the fast way to a column of packed
 * structs: Python's to_numpy). A message shorter than record_size is
 * EDR_EINVAL naming its topic and time; it is passed over. The reads of
 * edr_pack_read_frame and of this call share one position. */
int edr_pack_read_records(edr_pack r, void *buf, size_t record_size, size_t cap, int64_t *times, size_t *n);
/* The files stored with the dump (pack attachment sections, MCAP attachments),
 * in file order: an owned array of *n, names and bytes inside it; edr_free(*list).
 * Streams: EDR_ENOTSUP. */
int edr_pack_attachments(edr_pack r, edr_attachment **list, size_t *n);

/* ---- writing ---- */

/* Creates a pack file (durable after edr_pack_close). */
int edr_pack_open_write(const char *path, const edr_write_options *opts, edr_pack *out);
/* Appends frame f; borrowed user data may be reused once this returns. */
int edr_pack_write_frame(edr_pack w, edr_frame f);
/* Gives topic name#channel (channel NULL or "": none) type t (copied) from
 * the next message of it written on (t NULL: raw bytes); from_ns is the time
 * of that message when known (0 otherwise). `edr-lite info` shows the type,
 * `cat --decode` decodes by it. A type that is not valid (an unknown pairing
 * of encodings, a protobuf schema without the message's name, a layout that
 * does not compile: the message says which) is EDR_EINVAL. Setting the type
 * a topic has writes nothing. */
int edr_pack_set_topic_type(edr_pack w, const char *name, const char *channel, const edr_type *t, int64_t from_ns);
/* Appends one message (copied): name (NUL-terminated), channel (NULL or ""
 * when none), meta, data, gen_ts, done_ts, and seq when has_seq is 1; the
 * other fields are ignored (a message a reader gave can be written as it
 * is). The writer gathers messages into frames (a pending frame is written
 * before edr_pack_write_frame's, and by edr_pack_flush and edr_pack_close). */
int edr_pack_write_message(edr_pack w, const edr_message *m);
/* Stores an attachment (copied) in the file, written at once. */
int edr_pack_add_attachment(edr_pack w, const edr_attachment *a);
/* Stores a named metadata blob (copied), written by edr_pack_close. */
int edr_pack_add_metadata(edr_pack w, const char *name, const void *data, size_t len);
/* Makes what was written durable (fdatasync). */
int edr_pack_flush(edr_pack w);
/* Closes a file handle: a reader, or a writer (index, trailer, fsync). */
int edr_pack_close(edr_pack h);

/* ---- frames ---- */

int edr_frame_create(uint64_t id, int64_t time_ns, edr_frame *out);
/* A frame from its parts: parts[0] an encoded meta, parts[1..] the data blocks (copied). */
int edr_frame_from_parts(const edr_bytes *parts, size_t n, edr_frame *out);
/* A frame from one frame record as it sits in a pack file (copied, CRC-checked);
 * *used (may be NULL) gets the record's length. */
int edr_frame_from_record(const void *rec, size_t len, edr_frame *out, size_t *used);
/* Destroys a frame made by edr_frame_create/_from_*; not one a reader gave. */
int edr_frame_destroy(edr_frame f);

int edr_frame_id(edr_frame f, uint64_t *id);
int edr_frame_type(edr_frame f, int32_t *type);
int edr_frame_time(edr_frame f, int64_t *time_ns);
int edr_frame_done_time(edr_frame f, int64_t *done_ns);
int edr_frame_set_id(edr_frame f, uint64_t id);
int edr_frame_set_type(edr_frame f, int32_t type);
int edr_frame_set_time(edr_frame f, int64_t time_ns);
int edr_frame_set_done_time(edr_frame f, int64_t done_ns);

/* Adds a message without data; meta is copied. */
int edr_frame_add_meta(edr_frame f, const char *name, const char *channel, const void *meta, size_t meta_len,
                       int64_t gen_ts, int64_t done_ts);
/* Adds a message with a data block; meta and data are copied. */
int edr_frame_add_meta_with_data(edr_frame f, const char *name, const char *channel, const void *meta,
                                 size_t meta_len, int64_t gen_ts, int64_t done_ts, const void *data,
                                 size_t data_len);
/* As edr_frame_add_meta_with_data without copying meta and data: they must
 * stay valid and unchanged until the frame is written, destroyed or re-read. */
int edr_frame_add_meta_with_user_data(edr_frame f, const char *name, const char *channel, const void *meta,
                                      size_t meta_len, int64_t gen_ts, int64_t done_ts, const void *data,
                                      size_t data_len);
/* Gives message i of frame f its producer's sequence number. */
int edr_frame_set_seq(edr_frame f, size_t i, uint64_t seq);
/* Removes every message named name (all channels); *removed (may be NULL) gets how many. */
int edr_frame_remove(edr_frame f, const char *name, size_t *removed);
/* Removes the messages of topic name#channel. */
int edr_frame_remove_channel(edr_frame f, const char *name, const char *channel, size_t *removed);

/* The frame's messages, borrowed until the next call on f. */
int edr_frame_messages(edr_frame f, const edr_message **msgs, size_t *n);
/* Topics "name#channel" in order of first appearance: an owned array of *n strings. */
int edr_frame_topic_count(edr_frame f, size_t *n);
int edr_frame_topics(edr_frame f, char ***topics, size_t *n);
/* The channels of messages named name: an owned array of *n strings. */
int edr_frame_channel_count(edr_frame f, const char *name, size_t *n);
int edr_frame_channels(edr_frame f, const char *name, char ***channels, size_t *n);
/* The messages of topic name#channel with their data: an owned array whose bytes are borrowed from f. */
int edr_frame_block_count(edr_frame f, const char *name, const char *channel, size_t *n);
int edr_frame_blocks(edr_frame f, const char *name, const char *channel, edr_block **blocks, size_t *n);
/* The frame as parts (Parts): [0] its encoded meta, [1..] its data blocks,
 * the array and all the bytes in one owned allocation. */
int edr_frame_part_count(edr_frame f, size_t *n);
int edr_frame_parts(edr_frame f, edr_bytes **parts, size_t *n);

/* ---- layouts ---- */

/* The record a packed layout describes (t: x-edr-packed with an x-edr-layout
 * schema of fixed size), as an owned NUL-terminated JSON document for
 * programs that map it onto their own types (Python's to_numpy builds a
 * numpy dtype from it):
 *   {"name":"vehicle.State","size":N,"fields":[F...]}
 *   F = {"name":"speed","offset":0,"type":"f32le","format":"<f4","shape":[],"unit":"m/s"}
 *     | {"name":"p","offset":8,"size":20,"shape":[2],"fields":[F...]}     (a struct, arrays of it)
 * format is numpy's: "<f4", ">i2", "|u1", "|b1" (bool), "|S8" (char[8]);
 * shape lists an array's length ([] for one value); pad leaves a gap. A
 * layout with length-prefixed strings or bytes has no fixed record:
 * EDR_EINVAL naming the field; a schema that does not compile: EDR_EINVAL
 * with the layout's line and column. edr_free(*json). */
int edr_layout_json(const edr_type *t, char **json);

#ifdef __cplusplus
}
#endif

#endif /* EDR_PACK_H */
