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

#define EDR_PACK_API_VERSION 1

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
	int32_t reserved;
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
	const char *type;     /* from the dump information or the MCAP channel; "" when unknown */
	uint64_t messages;
} edr_topic;

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

/* Options of edr_pack_open_write; NULL means all zero. */
typedef struct edr_write_options {
	int32_t compression;  /* EDR_COMPRESS_* */
	int32_t reserved;
	const char *writer;   /* the producing program, in the file header; NULL = "libedrpack" */
	int64_t created_ns;   /* 0 = now */
} edr_write_options;

/* A read callback: fill buf with up to len bytes; return how many (> 0),
 * 0 at the end of the stream, < 0 on error. Called on the thread that called
 * edr_pack_read_frame; must not call the library on the same handle. */
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
/* Reads a pack or MCAP file held in memory; buf must stay valid and
 * unchanged until edr_pack_close. */
int edr_pack_open_mem(const void *buf, size_t len, edr_pack *out);
/* Reads a pack file from a blocking file descriptor (a pipe, a socket, a
 * file) front to back. The library does not close fd. */
int edr_pack_open_fd(int fd, edr_pack *out);
/* Reads a pack file from a callback, front to back. */
int edr_pack_open_callback(edr_read_fn fn, void *user, edr_pack *out);
/* Reads the next frame (with its data when with_data != 0) into *view.
 * EDR_EOF after the last. view and all it points to are borrowed until the
 * next call on r. MCAP files read one message per frame, in log-time order. */
int edr_pack_read_frame(edr_pack r, int with_data, edr_frame_view *view);
/* The offset of the next frame (pack files and streams). */
int edr_pack_tell(edr_pack r, int64_t *offset);
/* Moves to a frame offset from edr_pack_tell or edr_frame_view.offset (pack files). */
int edr_pack_seek(edr_pack r, int64_t offset);
/* Moves to the first frame (file order) whose time is >= time_ns (pack
 * files, through the index); MCAP: the first message with log time >= time_ns. */
int edr_pack_seek_time(edr_pack r, int64_t time_ns);
/* What the file holds (files and memory; not streams). */
int edr_pack_summary(edr_pack r, edr_summary *out);
/* The file's topics: an owned array of *n topics (strings inside it); edr_free(*topics). */
int edr_pack_topics(edr_pack r, edr_topic **topics, size_t *n);

/* ---- writing ---- */

/* Creates a pack file (durable after edr_pack_close). */
int edr_pack_open_write(const char *path, const edr_write_options *opts, edr_pack *out);
/* Appends frame f; borrowed user data may be reused once this returns. */
int edr_pack_write_frame(edr_pack w, edr_frame f);
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

#ifdef __cplusplus
}
#endif

#endif /* EDR_PACK_H */
