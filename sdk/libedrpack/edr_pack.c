//go:build cgo

/*
 * The C API of edr_pack.h as thin wrappers over the Go exports (edrgo_*):
 * cgo cannot export const parameters, and the last error of a call that
 * has no handle (an open, a create, a bad handle) is kept here per thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "edr_pack.h"
#include "_cgo_export.h"

/* The message of this thread's last failure without a handle, malloc'd by
 * the Go side or strdup, lives in a thread-specific slot whose destructor
 * frees it when the thread exits: a __thread pointer leaked it with every
 * thread that ever failed a call (LeakSanitizer: 52 to 65 bytes a thread). */
static pthread_key_t err_key;
static int err_key_ok;
static pthread_once_t err_once = PTHREAD_ONCE_INIT;
static __thread int64_t tls_off = -1;

static void err_key_make(void) { err_key_ok = pthread_key_create(&err_key, free) == 0; }

static const char *tls_err(void) {
	pthread_once(&err_once, err_key_make);
	return err_key_ok ? pthread_getspecific(err_key) : NULL;
}

static void tls_set(char *msg, int64_t off) {
	pthread_once(&err_once, err_key_make);
	tls_off = off;
	if (!err_key_ok) {
		free(msg); /* no slot to keep it in: edr_last_error(0) says "" */
		return;
	}
	free(pthread_getspecific(err_key));
	if (pthread_setspecific(err_key, msg) != 0) {
		free(msg);
	}
}

/* keep files the message of a call without a handle. */
static int keep(int rc, char *msg, int64_t off) {
	if (rc < 0 && msg != NULL) {
		tls_set(msg, off);
	} else {
		free(msg);
	}
	return rc;
}

/* checked notes a bad or busy handle, whose own error slot cannot say so. */
static int checked(int rc) {
	if (rc == EDR_EBADHANDLE) {
		tls_set(strdup("edr: bad handle: unknown, closed, destroyed, or of another kind"), -1);
	} else if (rc == EDR_EBUSY) {
		tls_set(strdup("edr: handle busy: another thread is inside a call on it (a handle is used by one thread at a time)"), -1);
	}
	return rc;
}

__attribute__((visibility("hidden"))) ptrdiff_t edr_call_read(edr_read_fn fn, void *user, void *buf, size_t len) {
	return fn(user, buf, len);
}

/* "libedrpack API (edr-lite pack format MAJOR.MINOR written)": the API is EDR_PACK_API_VERSION. */
const char *edr_version(void) { return "libedrpack 2 (edr-lite pack format 1.1)"; }

const char *edr_last_error(uint64_t h) {
	if (h == 0) {
		const char *e = tls_err();
		return e != NULL ? e : "";
	}
	const char *s = edrgo_last_error(h);
	return s != NULL ? s : "edr: bad or busy handle";
}

int64_t edr_error_offset(uint64_t h) { return h == 0 ? tls_off : edrgo_error_offset(h); }

int edr_free(void *p) { return edrgo_free(p); }

#define CREATOR(call)                        \
	do {                                 \
		char *msg_ = NULL;           \
		int64_t off_ = -1;           \
		int rc_ = call;              \
		return keep(rc_, msg_, off_); \
	} while (0)

int edr_pack_open_read(const char *path, edr_pack *out) {
	CREATOR(edrgo_pack_open_read((char *)path, out, &msg_, &off_));
}

int edr_pack_open_read_with(const char *path, const edr_read_options *opts, edr_pack *out) {
	CREATOR(edrgo_pack_open_read_with((char *)path, (edr_read_options *)opts, out, &msg_, &off_));
}

int edr_pack_skipped(edr_pack r, edr_skipped *out) { return checked(edrgo_pack_skipped(r, out)); }

int edr_pack_open_mem(const void *buf, size_t len, edr_pack *out) {
	CREATOR(edrgo_pack_open_mem_with((void *)buf, len, NULL, out, &msg_, &off_));
}

int edr_pack_open_fd(int fd, edr_pack *out) { CREATOR(edrgo_pack_open_fd_with(fd, NULL, out, &msg_, &off_)); }

int edr_pack_open_callback(edr_read_fn fn, void *user, edr_pack *out) {
	CREATOR(edrgo_pack_open_callback_with(fn, user, NULL, out, &msg_, &off_));
}

int edr_pack_open_mem_with(const void *buf, size_t len, const edr_read_options *opts, edr_pack *out) {
	CREATOR(edrgo_pack_open_mem_with((void *)buf, len, (edr_read_options *)opts, out, &msg_, &off_));
}

int edr_pack_open_fd_with(int fd, const edr_read_options *opts, edr_pack *out) {
	CREATOR(edrgo_pack_open_fd_with(fd, (edr_read_options *)opts, out, &msg_, &off_));
}

int edr_pack_open_callback_with(edr_read_fn fn, void *user, const edr_read_options *opts, edr_pack *out) {
	CREATOR(edrgo_pack_open_callback_with(fn, user, (edr_read_options *)opts, out, &msg_, &off_));
}

int edr_pack_set_filter(edr_pack r, const edr_filter *f) { return checked(edrgo_pack_set_filter(r, (edr_filter *)f)); }

int edr_pack_read_records(edr_pack r, void *buf, size_t record_size, size_t cap, int64_t *times, size_t *n) {
	return checked(edrgo_pack_read_records(r, buf, record_size, cap, times, n));
}

int edr_pack_attachments(edr_pack r, edr_attachment **list, size_t *n) {
	return checked(edrgo_pack_attachments(r, list, n));
}

int edr_pack_set_topic_type(edr_pack w, const char *name, const char *channel, const edr_type *t, int64_t from_ns) {
	return checked(edrgo_pack_set_topic_type(w, (char *)name, (char *)channel, (edr_type *)t, from_ns));
}

int edr_pack_write_message(edr_pack w, const edr_message *m) {
	return checked(edrgo_pack_write_message(w, (edr_message *)m));
}

int edr_pack_add_attachment(edr_pack w, const edr_attachment *a) {
	return checked(edrgo_pack_add_attachment(w, (edr_attachment *)a));
}

int edr_frame_set_seq(edr_frame f, size_t i, uint64_t seq) { return checked(edrgo_frame_set_seq(f, i, seq)); }

/* A failure has no handle: its message goes to edr_last_error(0). */
int edr_layout_json(const edr_type *t, char **json) {
	char *msg_ = NULL;
	int rc = edrgo_layout_json((edr_type *)t, json, &msg_);
	return keep(rc, msg_, -1);
}

int edr_pack_read_frame(edr_pack r, int with_data, edr_frame_view *view) {
	return checked(edrgo_pack_read_frame(r, with_data, view));
}

int edr_pack_tell(edr_pack r, int64_t *offset) { return checked(edrgo_pack_tell(r, offset)); }
int edr_pack_seek(edr_pack r, int64_t offset) { return checked(edrgo_pack_seek(r, offset)); }
int edr_pack_seek_time(edr_pack r, int64_t time_ns) { return checked(edrgo_pack_seek_time(r, time_ns)); }
int edr_pack_summary(edr_pack r, edr_summary *out) { return checked(edrgo_pack_summary(r, out)); }
int edr_pack_topics(edr_pack r, edr_topic **topics, size_t *n) { return checked(edrgo_pack_topics(r, topics, n)); }

int edr_pack_open_write(const char *path, const edr_write_options *opts, edr_pack *out) {
	CREATOR(edrgo_pack_open_write((char *)path, (edr_write_options *)opts, out, &msg_, &off_));
}

int edr_pack_write_frame(edr_pack w, edr_frame f) { return checked(edrgo_pack_write_frame(w, f)); }

int edr_pack_add_metadata(edr_pack w, const char *name, const void *data, size_t len) {
	return checked(edrgo_pack_add_metadata(w, (char *)name, (void *)data, len));
}

int edr_pack_flush(edr_pack w) { return checked(edrgo_pack_flush(w)); }

/* A failed close (a writer's fsync) has no handle left to ask: its message
 * goes to edr_last_error(0). */
int edr_pack_close(edr_pack h) {
	char *msg_ = NULL;
	int64_t off_ = -1;
	int rc = edrgo_pack_close(h, &msg_, &off_);
	return checked(keep(rc, msg_, off_));
}

int edr_frame_create(uint64_t id, int64_t time_ns, edr_frame *out) {
	CREATOR(edrgo_frame_create(id, time_ns, out, &msg_, &off_));
}

int edr_frame_from_parts(const edr_bytes *parts, size_t n, edr_frame *out) {
	CREATOR(edrgo_frame_from_parts((edr_bytes *)parts, n, out, &msg_, &off_));
}

int edr_frame_from_record(const void *rec, size_t len, edr_frame *out, size_t *used) {
	CREATOR(edrgo_frame_from_record((void *)rec, len, out, used, &msg_, &off_));
}

int edr_frame_destroy(edr_frame f) { return checked(edrgo_frame_destroy(f)); }

int edr_frame_id(edr_frame f, uint64_t *id) { return checked(edrgo_frame_id(f, id)); }
int edr_frame_type(edr_frame f, int32_t *type) { return checked(edrgo_frame_type(f, type)); }
int edr_frame_time(edr_frame f, int64_t *time_ns) { return checked(edrgo_frame_time(f, time_ns)); }
int edr_frame_done_time(edr_frame f, int64_t *done_ns) { return checked(edrgo_frame_done_time(f, done_ns)); }
int edr_frame_set_id(edr_frame f, uint64_t id) { return checked(edrgo_frame_set_id(f, id)); }
int edr_frame_set_type(edr_frame f, int32_t type) { return checked(edrgo_frame_set_type(f, type)); }
int edr_frame_set_time(edr_frame f, int64_t time_ns) { return checked(edrgo_frame_set_time(f, time_ns)); }
int edr_frame_set_done_time(edr_frame f, int64_t done_ns) { return checked(edrgo_frame_set_done_time(f, done_ns)); }

/* how: 0 meta copied, 1 meta and data copied, 2 borrowed (frame.go). */
int edr_frame_add_meta(edr_frame f, const char *name, const char *channel, const void *meta, size_t meta_len,
                       int64_t gen_ts, int64_t done_ts) {
	return checked(edrgo_frame_add(f, 0, (char *)name, (char *)channel, (void *)meta, meta_len, gen_ts, done_ts, NULL, 0));
}

int edr_frame_add_meta_with_data(edr_frame f, const char *name, const char *channel, const void *meta,
                                 size_t meta_len, int64_t gen_ts, int64_t done_ts, const void *data,
                                 size_t data_len) {
	return checked(edrgo_frame_add(f, 1, (char *)name, (char *)channel, (void *)meta, meta_len, gen_ts, done_ts,
	                               (void *)data, data_len));
}

int edr_frame_add_meta_with_user_data(edr_frame f, const char *name, const char *channel, const void *meta,
                                      size_t meta_len, int64_t gen_ts, int64_t done_ts, const void *data,
                                      size_t data_len) {
	return checked(edrgo_frame_add(f, 2, (char *)name, (char *)channel, (void *)meta, meta_len, gen_ts, done_ts,
	                               (void *)data, data_len));
}

int edr_frame_remove(edr_frame f, const char *name, size_t *removed) {
	return checked(edrgo_frame_remove(f, (char *)name, NULL, 0, removed));
}

int edr_frame_remove_channel(edr_frame f, const char *name, const char *channel, size_t *removed) {
	return checked(edrgo_frame_remove(f, (char *)name, (char *)channel, 1, removed));
}

int edr_frame_messages(edr_frame f, const edr_message **msgs, size_t *n) {
	return checked(edrgo_frame_messages(f, (edr_message **)msgs, n));
}

int edr_frame_topic_count(edr_frame f, size_t *n) { return checked(edrgo_frame_topics(f, NULL, n)); }
int edr_frame_topics(edr_frame f, char ***topics, size_t *n) {
	if (topics == NULL) {
		return EDR_EINVAL;
	}
	return checked(edrgo_frame_topics(f, topics, n));
}

int edr_frame_channel_count(edr_frame f, const char *name, size_t *n) {
	return checked(edrgo_frame_channels(f, (char *)name, NULL, n));
}
int edr_frame_channels(edr_frame f, const char *name, char ***channels, size_t *n) {
	if (channels == NULL) {
		return EDR_EINVAL;
	}
	return checked(edrgo_frame_channels(f, (char *)name, channels, n));
}

int edr_frame_block_count(edr_frame f, const char *name, const char *channel, size_t *n) {
	return checked(edrgo_frame_blocks(f, (char *)name, (char *)channel, NULL, n));
}
int edr_frame_blocks(edr_frame f, const char *name, const char *channel, edr_block **blocks, size_t *n) {
	if (blocks == NULL) {
		return EDR_EINVAL;
	}
	return checked(edrgo_frame_blocks(f, (char *)name, (char *)channel, blocks, n));
}

int edr_frame_part_count(edr_frame f, size_t *n) { return checked(edrgo_frame_parts(f, NULL, n)); }
int edr_frame_parts(edr_frame f, edr_bytes **parts, size_t *n) {
	if (parts == NULL) {
		return EDR_EINVAL;
	}
	return checked(edrgo_frame_parts(f, parts, n));
}
