/*
 * The C side of sdk/sdk_test.go: each mode exercises libedrpack and prints
 * what the Go test compares with the Go API and the edr-lite binary.
 *
 *   summary FILE          per topic: messages, data bytes, FNV-1a 64 of the payloads in order
 *   fd FILE | callback FILE | mem FILE   the same, read as a stream from a file descriptor,
 *                         through a read callback, or from memory
 *   seek FILE T...        for each time: the frame edr_pack_seek_time lands on, then
 *                         how many messages reading on to the end yields and the sum of
 *                         FNV-1a 64 of "TOPIC@TIME" over them
 *   write OUT             builds frames every way the API offers and writes a pack file
 *   corrupt FILE          reads a damaged file: must end in an error code with an offset
 *   shrink FILE N|recreate   reads two frames, then the file shrinks under the reader
 *                         (truncated to N bytes, or re-created by edr_pack_open_write): the
 *                         last view stays readable, the reads that follow end in an error
 *                         code with an offset, seeks and the summary answer; never a crash
 *   skip FILE             reads a damaged file with skip_damaged: frames, messages, what was
 *                         skipped; then without it: the error code, which stays
 *   misuse                wrong handles, double close, double free, seek on a stream...
 *   bench FILE ROUNDS     times whole-file reads: bytes and nanoseconds per round
 *   types FILE            each topic's type (edr_pack_topics) and the types its messages carry
 *   filter FILE FROM TO [TOPIC...]   reads with edr_pack_set_filter (FROM, TO: "-" when unset):
 *                         per topic messages, bytes, FNV-1a 64 (as summary); TOPIC "!x" excludes x
 *   records FILE SIZE FROM TO TOPIC  the same selection through edr_pack_read_records in
 *                         chunks of 7 records, mixed with edr_pack_read_frame
 *   typed OUT             writes a typed dump (packed, JSON, raw topics; sequence numbers; an
 *                         attachment) through edr_pack_set_topic_type and edr_pack_write_message,
 *                         reads it back: types, records, attachment
 *   layout                edr_layout_json of a layout with every kind of member, and its errors
 *   threads N             N threads in turn fail a call without a handle (the thread's error)
 *   bench-filter FILE ROUNDS FROM TO TOPIC   times filtered whole-file reads
 *   bug                   a use after free and a branch on uninitialised memory in C, with
 *                         the library in use: valgrind must report them through its suppressions
 *
 * Exit status 0 when the mode did what it should; the output says what it saw.
 */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edr_pack.h"

#define CHECK(call)                                                                                  \
	do {                                                                                         \
		int rc_ = (call);                                                                    \
		if (rc_ < 0) {                                                                       \
			fprintf(stderr, "%s:%d: %s = %d: %s\n", __FILE__, __LINE__, #call, rc_,      \
			        edr_last_error(0));                                                  \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

#define EXPECT(cond)                                                                                 \
	do {                                                                                         \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);          \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

/* ---- per-topic accounting ---- */

typedef struct topic_acc {
	char *name;
	uint64_t messages, bytes, fnv;
} topic_acc;

typedef struct summary {
	topic_acc *t;
	size_t n, cap;
	uint64_t frames, messages;
} summary;

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void account(summary *s, const edr_message *m) {
	/* the topic as edr-lite cat prints it: name, or name#channel */
	char key[512];
	snprintf(key, sizeof key, m->channel_len ? "%s#%s" : "%s%s", m->name, m->channel_len ? m->channel : "");
	topic_acc *t = NULL;
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->t[i].name, key) == 0) {
			t = &s->t[i];
			break;
		}
	}
	if (t == NULL) {
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 16;
			s->t = realloc(s->t, s->cap * sizeof *s->t);
			EXPECT(s->t != NULL);
		}
		t = &s->t[s->n++];
		t->name = strdup(key);
		t->messages = t->bytes = 0;
		t->fnv = 14695981039346656037ULL;
	}
	t->messages++;
	t->bytes += m->data_len;
	if (m->data != NULL) {
		t->fnv = fnv1a(t->fnv, m->data, m->data_len);
	}
	s->messages++;
}

static void print_summary(summary *s) {
	printf("frames %" PRIu64 " messages %" PRIu64 "\n", s->frames, s->messages);
	for (size_t i = 0; i < s->n; i++) {
		printf("topic %s %" PRIu64 " %" PRIu64 " %016" PRIx64 "\n", s->t[i].name, s->t[i].messages, s->t[i].bytes,
		       s->t[i].fnv);
		free(s->t[i].name);
	}
	free(s->t);
}

/* read_all reads every frame of r into s; returns the last code. */
static int read_all(edr_pack r, summary *s) {
	edr_frame_view v;
	int rc;
	while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
		s->frames++;
		for (size_t i = 0; i < v.n_messages; i++) {
			account(s, &v.messages[i]);
		}
	}
	return rc;
}

static int mode_summary(const char *path) {
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	edr_summary sum;
	CHECK(edr_pack_summary(r, &sum));
	edr_topic *topics;
	size_t nt;
	CHECK(edr_pack_topics(r, &topics, &nt));
	printf("format %d indexed %d writer %s\n", sum.format, sum.indexed, sum.writer);
	for (size_t i = 0; i < nt; i++) {
		printf("listed %s%s%s %" PRIu64 "\n", topics[i].name, topics[i].channel[0] ? "#" : "", topics[i].channel,
		       topics[i].messages);
	}
	CHECK(edr_free(topics));
	summary s = {0};
	int rc = read_all(r, &s);
	if (rc != EDR_EOF) {
		fprintf(stderr, "read: %d %s\n", rc, edr_last_error(r));
		return 1;
	}
	CHECK(edr_pack_close(r));
	print_summary(&s);
	return 0;
}

static ptrdiff_t read_cb(void *user, void *buf, size_t len) {
	int fd = *(int *)user;
	if (len > 1000) {
		len = 1000; /* short reads on purpose */
	}
	ssize_t n = read(fd, buf, len);
	return n < 0 ? -1 : (ptrdiff_t)n;
}

static int mode_stream(const char *how, const char *path) {
	int fd = open(path, O_RDONLY);
	EXPECT(fd >= 0);
	edr_pack r;
	void *mem = NULL;
	if (strcmp(how, "fd") == 0) {
		CHECK(edr_pack_open_fd(fd, &r));
	} else if (strcmp(how, "callback") == 0) {
		CHECK(edr_pack_open_callback(read_cb, &fd, &r));
	} else {
		off_t size = lseek(fd, 0, SEEK_END);
		EXPECT(size > 0);
		mem = malloc((size_t)size);
		EXPECT(mem != NULL && pread(fd, mem, (size_t)size, 0) == size);
		CHECK(edr_pack_open_mem(mem, (size_t)size, &r));
	}
	summary s = {0};
	int rc = read_all(r, &s);
	if (rc != EDR_EOF) {
		fprintf(stderr, "read: %d %s\n", rc, edr_last_error(r));
		return 1;
	}
	int64_t off = -1;
	if (strcmp(how, "mem") != 0) {
		CHECK(edr_pack_tell(r, &off));
		EXPECT(off == lseek(fd, 0, SEEK_END));
		EXPECT(edr_pack_seek_time(r, 0) == EDR_ENOTSUP);
		EXPECT(edr_pack_summary(r, &(edr_summary){0}) == EDR_ENOTSUP);
	}
	CHECK(edr_pack_close(r));
	free(mem);
	close(fd);
	print_summary(&s);
	return 0;
}

static int mode_seek(const char *path, int argc, char **argv) {
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	for (int i = 0; i < argc; i++) {
		int64_t t = strtoll(argv[i], NULL, 10);
		CHECK(edr_pack_seek_time(r, t));
		edr_frame_view v;
		int rc = edr_pack_read_frame(r, 0, &v);
		CHECK(rc);
		if (rc == EDR_EOF) {
			printf("seek %" PRId64 " eof\nafter %" PRId64 " messages 0 sum %016" PRIx64 "\n", t, t, (uint64_t)0);
			continue;
		}
		printf("seek %" PRId64 " offset %" PRId64 " id %" PRIu64 " time %" PRId64 "\n", t, v.offset, v.id, v.time_ns);
		/* every message from there on: exactly those with time >= t */
		uint64_t n = 0, sum = 0;
		do {
			for (size_t k = 0; k < v.n_messages; k++) {
				const edr_message *m = &v.messages[k];
				EXPECT(m->time_ns >= t);
				char key[1024];
				int len = snprintf(key, sizeof key, "%.*s%s%.*s@%" PRId64, (int)m->name_len, m->name,
				                   m->channel_len > 0 ? "#" : "", (int)m->channel_len, m->channel, m->time_ns);
				EXPECT(len > 0 && (size_t)len < sizeof key);
				sum += fnv1a(14695981039346656037ULL, (const uint8_t *)key, (size_t)len);
				n++;
			}
		} while ((rc = edr_pack_read_frame(r, 0, &v)) == EDR_OK);
		CHECK(rc);
		printf("after %" PRId64 " messages %" PRIu64 " sum %016" PRIx64 "\n", t, n, sum);
		CHECK(edr_pack_seek_time(r, t));
		CHECK(edr_pack_read_frame(r, 0, &v));
		if (v.offset >= 0) { /* tell / seek back to it reads it again, whole */
			size_t filtered = v.n_messages;
			CHECK(edr_pack_seek(r, v.offset));
			edr_frame_view w;
			CHECK(edr_pack_read_frame(r, 0, &w));
			EXPECT(w.id == v.id && w.time_ns == v.time_ns && w.n_messages >= filtered);
		}
	}
	CHECK(edr_pack_close(r));
	return 0;
}

/* mode_write builds frames every way the API offers and writes them. */
static int mode_write(const char *path) {
	edr_write_options o = {EDR_COMPRESS_ZSTD, 0, "edrpack_test.c", 1700000000000000000LL};
	edr_pack w;
	CHECK(edr_pack_open_write(path, &o, &w));
	static uint8_t image[64 << 10];
	for (size_t i = 0; i < sizeof image; i++) {
		image[i] = (uint8_t)(i * 7 + i / 256);
	}
	const int64_t t0 = 1700000000000000000LL;
	for (int i = 0; i < 20; i++) {
		int64_t t = t0 + (int64_t)i * 10000000;
		edr_frame f;
		CHECK(edr_frame_create((uint64_t)i, t, &f));
		CHECK(edr_frame_set_type(f, i % 2 ? EDR_FRAME_FREESYNC : EDR_FRAME_BUNDLE));
		CHECK(edr_frame_set_done_time(f, t + 5000000));
		char meta[32];
		int n = snprintf(meta, sizeof meta, "{\"v\":%d}", 20 + i);
		CHECK(edr_frame_add_meta(f, "vehicle/speed", "can0", meta, (size_t)n, t, t + 1000));
		uint8_t imu[24];
		for (size_t k = 0; k < sizeof imu; k++) {
			imu[k] = (uint8_t)(i + k);
		}
		CHECK(edr_frame_add_meta_with_data(f, "vehicle/imu", "", NULL, 0, t + 10, t + 2000, imu, sizeof imu));
		memset(imu, 0xff, sizeof imu); /* copied: changing it now changes nothing */
		CHECK(edr_frame_add_meta_with_user_data(f, "camera/front", "", "jpeg", 4, t + 20, t + 3000, image,
		                                        sizeof image));
		CHECK(edr_frame_add_meta_with_data(f, "debug", "x", NULL, 0, t, t, "drop me", 7));
		size_t removed = 0;
		CHECK(edr_frame_remove_channel(f, "debug", "x", &removed));
		EXPECT(removed == 1);
		size_t nt;
		char **topics;
		CHECK(edr_frame_topics(f, &topics, &nt));
		EXPECT(nt == 3 && strcmp(topics[0], "vehicle/speed#can0") == 0 && strcmp(topics[2], "camera/front#") == 0);
		CHECK(edr_free(topics));
		size_t nb;
		edr_block *blocks;
		CHECK(edr_frame_blocks(f, "vehicle/imu", "", &blocks, &nb));
		EXPECT(nb == 1 && blocks[0].data_len == 24 && blocks[0].data[0] == (uint8_t)i);
		CHECK(edr_free(blocks));
		if (i == 7) { /* rebuild the frame from its parts: the same frame */
			edr_bytes *parts;
			size_t np;
			CHECK(edr_frame_parts(f, &parts, &np));
			EXPECT(np == 3);
			edr_frame g;
			CHECK(edr_frame_from_parts(parts, np, &g));
			CHECK(edr_free(parts));
			CHECK(edr_frame_destroy(f));
			f = g;
		}
		CHECK(edr_pack_write_frame(w, f));
		CHECK(edr_frame_destroy(f));
	}
	CHECK(edr_pack_add_metadata(w, "note", "written by edrpack_test.c", 25));
	CHECK(edr_pack_flush(w));
	CHECK(edr_pack_close(w));
	printf("wrote %s\n", path);
	return 0;
}

static int mode_corrupt(const char *path) {
	edr_pack r;
	int rc = edr_pack_open_read(path, &r);
	if (rc < 0) {
		printf("error %d offset %" PRId64 " %s\n", rc, edr_error_offset(0), edr_last_error(0));
		return 0;
	}
	summary s = {0};
	rc = read_all(r, &s);
	if (rc == EDR_EOF) {
		fprintf(stderr, "a damaged file read to the end\n");
		return 1;
	}
	printf("error %d offset %" PRId64 " %s\n", rc, edr_error_offset(r), edr_last_error(r));
	edr_frame_view v;
	EXPECT(edr_pack_read_frame(r, 1, &v) == rc); /* the error stays */
	CHECK(edr_pack_close(r));
	for (size_t i = 0; i < s.n; i++) {
		free(s.t[i].name);
	}
	free(s.t);
	return 0;
}

static int mode_shrink(const char *path, const char *how) {
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	edr_frame_view v;
	CHECK(edr_pack_read_frame(r, 1, &v));
	CHECK(edr_pack_read_frame(r, 1, &v));
	EXPECT(v.n_messages > 0);
	const edr_message *m = &v.messages[v.n_messages - 1];
	uint64_t before = fnv1a(14695981039346656037ULL, m->data, m->data_len);
	if (strcmp(how, "recreate") == 0) {
		edr_pack w; /* truncates the file the reader maps */
		CHECK(edr_pack_open_write(path, NULL, &w));
		CHECK(edr_pack_flush(w));
		CHECK(edr_pack_close(w));
	} else {
		EXPECT(truncate(path, (off_t)strtoll(how, NULL, 10)) == 0);
	}
	/* the view of the frame read before is the handle's: still there */
	EXPECT(fnv1a(14695981039346656037ULL, m->data, m->data_len) == before);
	int rc;
	uint64_t frames = 2;
	while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
		frames++;
	}
	printf("frames %" PRIu64 " error %d offset %" PRId64 " %s\n", frames, rc, edr_error_offset(r), edr_last_error(r));
	rc = edr_pack_seek_time(r, 0);
	printf("seek_time %d\n", rc);
	if (rc == EDR_OK) {
		rc = edr_pack_read_frame(r, 1, &v);
		printf("read after seek %d\n", rc);
	}
	edr_summary sum;
	printf("summary %d\n", edr_pack_summary(r, &sum));
	CHECK(edr_pack_close(r));
	return 0;
}

static int mode_skip(const char *path) {
	edr_read_options o = {1, 0};
	edr_pack r;
	CHECK(edr_pack_open_read_with(path, &o, &r));
	edr_frame_view v;
	int rc;
	uint64_t frames = 0, messages = 0;
	while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
		frames++;
		messages += v.n_messages;
	}
	CHECK(rc);
	edr_skipped s;
	CHECK(edr_pack_skipped(r, &s));
	printf("frames %" PRIu64 " messages %" PRIu64 " skipped regions %" PRIu64 " frames %" PRIu64 " bytes %" PRIu64
	       " types %" PRIu64 " first %" PRId64 "\n",
	       frames, messages, s.regions, s.frames, s.bytes, s.types, s.first_offset);
	CHECK(edr_pack_close(r));
	/* the same from memory, and from a stream: the same messages, the same
	 * region, when a stream can pass it (a frame whose head checks out) */
	int fd = open(path, O_RDONLY);
	EXPECT(fd >= 0);
	off_t size = lseek(fd, 0, SEEK_END);
	void *mem = malloc((size_t)size);
	EXPECT(mem != NULL && pread(fd, mem, (size_t)size, 0) == size);
	for (int how = 0; how < 2; how++) {
		if (how == 0) {
			CHECK(edr_pack_open_mem_with(mem, (size_t)size, &o, &r));
		} else {
			EXPECT(lseek(fd, 0, SEEK_SET) == 0);
			CHECK(edr_pack_open_callback_with(read_cb, &fd, &o, &r));
		}
		uint64_t m2 = 0, f2 = 0;
		while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
			f2++;
			m2 += v.n_messages;
		}
		edr_skipped s2;
		CHECK(edr_pack_skipped(r, &s2));
		if (how == 1 && rc < 0) {
			printf("stream error %d offset %" PRId64 "\n", rc, edr_error_offset(r));
		} else {
			CHECK(rc);
			EXPECT(f2 == frames && m2 == messages && s2.regions == s.regions && s2.first_offset == s.first_offset);
			printf("%s frames %" PRIu64 " messages %" PRIu64 " skipped regions %" PRIu64 "\n", how ? "stream" : "mem", f2, m2,
			       s2.regions);
		}
		CHECK(edr_pack_close(r));
	}
	free(mem);
	close(fd);
	/* through a filter whose plan skips frames: the damage is still met and counted */
	const char *every[2] = {"*", "*/*"}; /* path.Match: * does not match a / */
	edr_filter flt = {every, 2, NULL, 0, 0, INT64_MAX, EDR_FILTER_END, 0};
	CHECK(edr_pack_open_read_with(path, &o, &r));
	CHECK(edr_pack_set_filter(r, &flt));
	uint64_t m3 = 0;
	while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
		m3 += v.n_messages;
	}
	CHECK(rc);
	edr_skipped s3;
	CHECK(edr_pack_skipped(r, &s3));
	EXPECT(m3 == messages && s3.regions == s.regions && s3.first_offset == s.first_offset);
	/* one message in the first frame: the plan skips every later frame, not
	 * past damage it meets (a section, a frame head), but without reading
	 * their data (damage there is not met) */
	const char *calib[1] = {"vehicle/calibration"};
	edr_filter one = {calib, 1, NULL, 0, 0, 0, 0, 0};
	CHECK(edr_pack_set_filter(r, &one));
	CHECK(edr_pack_close(r));
	CHECK(edr_pack_open_read_with(path, &o, &r));
	CHECK(edr_pack_set_filter(r, &one));
	m3 = 0;
	while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
		m3 += v.n_messages;
	}
	CHECK(rc);
	CHECK(edr_pack_skipped(r, &s3));
	printf("one-topic messages %" PRIu64 " skipped regions %" PRIu64 "\n", m3, s3.regions);
	CHECK(edr_pack_close(r));
	CHECK(edr_pack_open_read(path, &r));
	while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
	}
	printf("strict error %d offset %" PRId64 "\n", rc, edr_error_offset(r));
	EXPECT(rc == EDR_EOF || edr_pack_read_frame(r, 1, &v) == rc); /* the error stays */
	CHECK(edr_pack_skipped(r, &s));
	EXPECT(s.regions == 0 && s.first_offset == -1);
	CHECK(edr_pack_close(r));
	return 0;
}

/* reentrant: a read callback that calls the library on the handle it is
 * reading for; the library must refuse (EDR_EBUSY), not deadlock. */
typedef struct reentrant {
	int fd;
	edr_pack h;
	int busy;
} reentrant;

static ptrdiff_t reentrant_cb(void *user, void *buf, size_t len) {
	reentrant *re = user;
	if (re->h != 0) {
		int64_t off;
		if (edr_pack_tell(re->h, &off) == EDR_EBUSY) {
			re->busy++;
		}
	}
	ssize_t n = read(re->fd, buf, len);
	return n < 0 ? -1 : (ptrdiff_t)n;
}

static int mode_misuse(const char *path) {
	edr_pack r;
	EXPECT(edr_pack_open_read("/nonexistent/x.pack", &r) == EDR_EIO);
	EXPECT(strstr(edr_last_error(0), "/nonexistent/x.pack") != NULL);
	EXPECT(edr_pack_open_read(NULL, &r) == EDR_EINVAL);
	CHECK(edr_pack_open_read(path, &r));
	edr_frame_view v;
	CHECK(edr_pack_read_frame(r, 1, &v));
	EXPECT(edr_frame_destroy(v.frame) == EDR_EINVAL);   /* it belongs to the reader */
	EXPECT(edr_pack_write_frame(r, v.frame) == EDR_EBADHANDLE); /* r is no writer */
	EXPECT(edr_pack_read_frame(v.frame, 1, &v) == EDR_EBADHANDLE);
	EXPECT(edr_pack_read_frame(r, 1, NULL) == EDR_EINVAL);
	EXPECT(edr_pack_seek(r, 3) == EDR_EINVAL && edr_error_offset(r) == 3);
	const edr_message *m;
	size_t n;
	CHECK(edr_frame_messages(v.frame, &m, &n));
	EXPECT(n == v.n_messages && m == v.messages);
	edr_frame f = v.frame;
	CHECK(edr_pack_close(r));
	EXPECT(edr_pack_close(r) == EDR_EBADHANDLE);         /* double close */
	EXPECT(edr_frame_messages(f, &m, &n) == EDR_EBADHANDLE); /* died with its reader */
	EXPECT(strstr(edr_last_error(0), "bad handle") != NULL);
	EXPECT(edr_pack_read_frame(0, 1, &v) == EDR_EBADHANDLE);
	edr_frame g;
	CHECK(edr_frame_create(1, 2, &g));
	char **topics;
	CHECK(edr_frame_topics(g, &topics, &n));
	EXPECT(n == 0);
	CHECK(edr_free(topics));
	EXPECT(edr_free(topics) == EDR_EINVAL); /* double free */
	int local;
	EXPECT(edr_free(&local) == EDR_EINVAL); /* not ours */
	CHECK(edr_free(NULL));
	EXPECT(edr_frame_set_type(g, 7) == EDR_EINVAL);
	EXPECT(strstr(edr_last_error(g), "EDR_FRAME_BUNDLE") != NULL);
	EXPECT(edr_frame_from_record("EFRMxx", 6, &g, NULL) == EDR_ECORRUPT);
	CHECK(edr_frame_destroy(g));
	EXPECT(edr_frame_destroy(g) == EDR_EBADHANDLE);
	EXPECT(edr_pack_open_mem("not a pack file at all", 22, &r) == EDR_EFORMAT);
	reentrant re = {open(path, O_RDONLY), 0, 0};
	EXPECT(re.fd >= 0);
	CHECK(edr_pack_open_callback(reentrant_cb, &re, &re.h));
	CHECK(edr_pack_read_frame(re.h, 1, &v));
	EXPECT(re.busy > 0);
	EXPECT(strstr(edr_last_error(0), "busy") != NULL);
	CHECK(edr_pack_close(re.h));
	close(re.fd);
	printf("misuse ok\n");
	return 0;
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* mode_bench: ROUNDS times, open the file and read every frame with its
 * data; one line per round with the data bytes and the nanoseconds. */
static int mode_bench(const char *path, int rounds) {
	for (int i = 0; i < rounds; i++) {
		int64_t t = now_ns();
		edr_pack r;
		CHECK(edr_pack_open_read(path, &r));
		edr_frame_view v;
		uint64_t bytes = 0;
		int rc;
		while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
			for (size_t k = 0; k < v.n_messages; k++) {
				bytes += v.messages[k].data_len;
			}
		}
		CHECK(rc);
		CHECK(edr_pack_close(r));
		printf("round %d bytes %" PRIu64 " ns %" PRId64 "\n", i, bytes, now_ns() - t);
		fflush(stdout);
	}
	return 0;
}

/* ---- types, filters, typed writing ---- */

static void print_type(const char *what, const char *topic, const edr_type *t) {
	printf("%s %s enc=%s name=%s schema=%s len=%zu fnv=%016" PRIx64 "\n", what, topic, t->message_encoding,
	       t->schema_name, t->schema_encoding, t->schema_len,
	       t->schema_data != NULL ? fnv1a(14695981039346656037ULL, t->schema_data, t->schema_len)
	                              : (uint64_t)14695981039346656037ULL);
}

static void topic_key(char *key, size_t n, const char *name, size_t name_len, const char *channel, size_t channel_len) {
	snprintf(key, n, "%.*s%s%.*s", (int)name_len, name, channel_len ? "#" : "", (int)channel_len, channel);
}

/* mode_types: each topic's first type, then every distinct (topic, type)
 * the messages carry, in order of first appearance. */
static int mode_types(const char *path) {
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	edr_topic *topics;
	size_t nt;
	CHECK(edr_pack_topics(r, &topics, &nt));
	for (size_t i = 0; i < nt; i++) {
		char key[512];
		topic_key(key, sizeof key, topics[i].name, strlen(topics[i].name), topics[i].channel, strlen(topics[i].channel));
		EXPECT(strcmp(topics[i].type, topics[i].first_type.schema_name) == 0 && topics[i].n_types >= 1);
		print_type("topic", key, &topics[i].first_type);
	}
	CHECK(edr_free(topics));
	struct {
		char key[512];
		const edr_type *t;
	} seen[256];
	size_t nseen = 0;
	edr_frame_view v;
	int rc;
	while ((rc = edr_pack_read_frame(r, 0, &v)) == EDR_OK) {
		for (size_t i = 0; i < v.n_messages; i++) {
			const edr_message *m = &v.messages[i];
			EXPECT(m->type != NULL);
			char key[512];
			topic_key(key, sizeof key, m->name, m->name_len, m->channel, m->channel_len);
			size_t k = 0;
			while (k < nseen && !(seen[k].t == m->type && strcmp(seen[k].key, key) == 0)) {
				k++;
			}
			if (k == nseen && nseen < 256) {
				strcpy(seen[nseen].key, key);
				seen[nseen++].t = m->type;
				print_type("message", key, m->type);
			}
		}
	}
	CHECK(rc);
	CHECK(edr_pack_close(r));
	return 0;
}

/* parse_filter fills f from FROM TO TOPIC... ("-": unset; "!glob": exclude). */
static void parse_filter(edr_filter *f, const char *from, const char *to, int argc, char **argv, const char **inc,
                         const char **exc) {
	memset(f, 0, sizeof *f);
	if (strcmp(from, "-") != 0) {
		f->start_ns = strtoll(from, NULL, 10);
		f->flags |= EDR_FILTER_START;
	}
	if (strcmp(to, "-") != 0) {
		f->end_ns = strtoll(to, NULL, 10);
		f->flags |= EDR_FILTER_END;
	}
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] == '!') {
			exc[f->n_exclude++] = argv[i] + 1;
		} else {
			inc[f->n_topics++] = argv[i];
		}
	}
	f->topics = inc;
	f->exclude = exc;
}

/* mode_filter reads the selection twice (set_filter moves to its start)
 * and checks that both reads agree and every message is in the window. */
static int mode_filter(const char *path, const char *from, const char *to, int argc, char **argv) {
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	const char *inc[64], *exc[64];
	EXPECT(argc < 64);
	edr_filter f;
	parse_filter(&f, from, to, argc, argv, inc, exc);
	int rc = edr_pack_set_filter(r, &f);
	if (rc == EDR_ENOMATCH) {
		printf("nomatch %d %s\n", rc, edr_last_error(r));
		CHECK(edr_pack_close(r));
		return 0;
	}
	CHECK(rc);
	summary first = {0};
	for (int pass = 0; pass < 2; pass++) {
		summary s = {0};
		edr_frame_view v;
		while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
			EXPECT(v.n_messages > 0);
			s.frames++;
			for (size_t i = 0; i < v.n_messages; i++) {
				const edr_message *m = &v.messages[i];
				EXPECT((!(f.flags & EDR_FILTER_START) || m->time_ns >= f.start_ns) &&
				       (!(f.flags & EDR_FILTER_END) || m->time_ns <= f.end_ns));
				account(&s, m);
			}
		}
		CHECK(rc);
		EXPECT(edr_pack_read_frame(r, 1, &v) == EDR_EOF); /* stays at the end */
		if (pass == 0) {
			first = s;
			CHECK(edr_pack_set_filter(r, &f)); /* again: from the start of the selection */
			continue;
		}
		EXPECT(s.messages == first.messages && s.n == first.n);
		for (size_t i = 0; i < s.n; i++) {
			EXPECT(strcmp(s.t[i].name, first.t[i].name) == 0 && s.t[i].fnv == first.t[i].fnv);
			free(s.t[i].name);
		}
		free(s.t);
	}
	CHECK(edr_pack_set_filter(r, NULL)); /* every message again, from the start */
	summary all = {0};
	EXPECT(read_all(r, &all) == EDR_EOF && all.messages >= first.messages);
	for (size_t i = 0; i < all.n; i++) {
		free(all.t[i].name);
	}
	free(all.t);
	CHECK(edr_pack_close(r));
	print_summary(&first);
	return 0;
}

/* mode_records reads the selection's data as records of SIZE bytes in
 * chunks of 7, every third chunk followed by an edr_pack_read_frame (the
 * rest of the frame the records stopped in), and prints it as summary does. */
static int mode_records(const char *path, size_t size, const char *from, const char *to, const char *topic) {
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	const char *inc[1] = {topic}, *exc[1];
	edr_filter f;
	parse_filter(&f, from, to, 1, (char **)inc, inc, exc);
	CHECK(edr_pack_set_filter(r, &f));
	uint8_t *buf = malloc(7 * size);
	EXPECT(buf != NULL);
	int64_t times[7], last = INT64_MIN;
	uint64_t n_rec = 0, fnv = 14695981039346656037ULL, frames = 0;
	for (int round = 0;; round++) {
		size_t n = 0;
		int rc = edr_pack_read_records(r, buf, size, 7, times, &n);
		CHECK(rc);
		for (size_t i = 0; i < n; i++) {
			fnv = fnv1a(fnv, buf + i * size, size);
			EXPECT(times[i] >= last || frames > 0); /* MCAP: log-time order */
			last = times[i];
		}
		n_rec += n;
		if (rc == EDR_EOF) {
			break;
		}
		if (round % 3 == 2) {
			edr_frame_view v;
			rc = edr_pack_read_frame(r, 1, &v);
			CHECK(rc);
			if (rc == EDR_EOF) {
				break;
			}
			frames++;
			for (size_t i = 0; i < v.n_messages; i++) {
				EXPECT(v.messages[i].data_len >= size);
				fnv = fnv1a(fnv, v.messages[i].data, size);
				n_rec++;
			}
		}
	}
	free(buf);
	CHECK(edr_pack_close(r));
	printf("records %" PRIu64 " fnv %016" PRIx64 "\n", n_rec, fnv);
	return 0;
}

/* The typed dump of mode_typed. */
#define STATE_LAYOUT "# vehicle.State\nf32le speed (m/s); u8 gear; pad 3; i16le wheel[4] (rpm); u64le t (ns)"
typedef struct state {
	float speed;
	uint8_t gear;
	uint8_t pad[3];
	int16_t wheel[4];
	uint64_t t;
} __attribute__((packed)) state;

static int mode_typed(const char *path) {
	EXPECT(sizeof(state) == 24);
	const int64_t t0 = 1700000000000000000LL;
	edr_write_options o = {EDR_COMPRESS_LZ4, 0, "edrpack_test.c typed", t0};
	edr_pack w;
	CHECK(edr_pack_open_write(path, &o, &w));
	edr_type st = {"x-edr-packed", "vehicle.State", "x-edr-layout", (const uint8_t *)STATE_LAYOUT, strlen(STATE_LAYOUT)};
	CHECK(edr_pack_set_topic_type(w, "vehicle/state", "", &st, t0));
	const char *js = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}";
	edr_type note = {"json", "edr.Note", "jsonschema", (const uint8_t *)js, strlen(js)};
	CHECK(edr_pack_set_topic_type(w, "note", "driver", &note, 0));
	CHECK(edr_pack_set_topic_type(w, "blob", NULL, NULL, 0)); /* raw bytes */
	/* a type that does not compile is refused, naming the line and column */
	edr_type bad = {"x-edr-packed", "bad", "x-edr-layout", (const uint8_t *)"f33le x", 7};
	EXPECT(edr_pack_set_topic_type(w, "bad", "", &bad, 0) == EDR_EINVAL);
	EXPECT(strstr(edr_last_error(w), "f33le") != NULL && strstr(edr_last_error(w), "layout:1:") != NULL);
	edr_type badpair = {"protobuf", "x", "", NULL, 0};
	EXPECT(edr_pack_set_topic_type(w, "bad", "", &badpair, 0) == EDR_EINVAL);
	for (int i = 0; i < 50; i++) {
		int64_t t = t0 + (int64_t)i * 10000000;
		state s = {(float)i * 0.5f, (uint8_t)(i % 6), {0, 0, 0}, {(int16_t)i, (int16_t)-i, (int16_t)(i * 100), -32768}, (uint64_t)t};
		edr_message m = {0};
		m.name = "vehicle/state";
		m.data = (const uint8_t *)&s;
		m.data_len = sizeof s;
		m.gen_ts = t - 1000;
		m.done_ts = t;
		m.has_seq = 1;
		m.seq = (uint64_t)(1000 + i);
		CHECK(edr_pack_write_message(w, &m));
		if (i % 10 == 0) {
			char text[64];
			int n = snprintf(text, sizeof text, "{\"text\":\"mark %d\"}", i);
			edr_message j = {0};
			j.name = "note";
			j.channel = "driver";
			j.data = (const uint8_t *)text;
			j.data_len = (size_t)n;
			j.done_ts = t + 1;
			CHECK(edr_pack_write_message(w, &j));
			edr_message b = {0};
			b.name = "blob";
			b.data = (const uint8_t *)"\x01\x02\x03";
			b.data_len = 3;
			b.done_ts = t + 2;
			CHECK(edr_pack_write_message(w, &b));
		}
	}
	edr_attachment a = {"calibration.yaml", "application/yaml", t0, t0 - 5, (const uint8_t *)"gain: 2.5\n", 10};
	CHECK(edr_pack_add_attachment(w, &a));
	edr_message bad_seq = {0};
	bad_seq.name = "x";
	bad_seq.has_seq = 2;
	EXPECT(edr_pack_write_message(w, &bad_seq) == EDR_EINVAL);
	CHECK(edr_pack_close(w));

	/* read it back: types, the records through a filter, the attachment */
	edr_pack r;
	CHECK(edr_pack_open_read(path, &r));
	edr_topic *topics;
	size_t nt;
	CHECK(edr_pack_topics(r, &topics, &nt));
	EXPECT(nt == 3);
	for (size_t i = 0; i < nt; i++) {
		if (strcmp(topics[i].name, "vehicle/state") == 0) {
			EXPECT(strcmp(topics[i].first_type.message_encoding, "x-edr-packed") == 0);
			EXPECT(topics[i].first_type.schema_len == strlen(STATE_LAYOUT));
			EXPECT(memcmp(topics[i].first_type.schema_data, STATE_LAYOUT, strlen(STATE_LAYOUT)) == 0);
			char *json;
			CHECK(edr_layout_json(&topics[i].first_type, &json));
			printf("layout %s\n", json);
			CHECK(edr_free(json));
		} else if (strcmp(topics[i].name, "blob") == 0) {
			EXPECT(strcmp(topics[i].first_type.message_encoding, "x-edr-raw") == 0 && topics[i].first_type.schema_data == NULL);
		} else {
			EXPECT(strcmp(topics[i].channel, "driver") == 0 && strcmp(topics[i].type, "edr.Note") == 0);
		}
	}
	CHECK(edr_free(topics));
	const char *sel[1] = {"vehicle/state"};
	edr_filter f = {sel, 1, NULL, 0, t0 + 100000000, t0 + 199999999, EDR_FILTER_START | EDR_FILTER_END, 0};
	CHECK(edr_pack_set_filter(r, &f));
	state recs[32];
	int64_t times[32];
	size_t n = 0;
	EXPECT(edr_pack_read_records(r, recs, sizeof recs[0], 32, times, &n) == EDR_EOF);
	EXPECT(n == 10);
	for (size_t i = 0; i < n; i++) {
		int k = 10 + (int)i;
		EXPECT(recs[i].speed == (float)k * 0.5f && recs[i].gear == k % 6 && recs[i].wheel[2] == k * 100 &&
		       recs[i].wheel[3] == -32768 && (int64_t)recs[i].t == times[i] && times[i] == t0 + (int64_t)k * 10000000);
	}
	CHECK(edr_pack_set_filter(r, &f));
	edr_frame_view v;
	CHECK(edr_pack_read_frame(r, 1, &v));
	EXPECT(v.n_messages > 0 && v.messages[0].has_seq == 1 && v.messages[0].seq == 1010);
	EXPECT(strcmp(v.messages[0].type->schema_name, "vehicle.State") == 0);
	/* a record larger than the messages is refused, naming the topic */
	CHECK(edr_pack_set_filter(r, &f));
	EXPECT(edr_pack_read_records(r, recs, 100, 1, NULL, &n) == EDR_EINVAL && n == 0);
	EXPECT(strstr(edr_last_error(r), "vehicle/state") != NULL);
	/* a typo in a topic: EDR_ENOMATCH, the message lists the topics */
	const char *typo[1] = {"vehicle/stat"};
	edr_filter g = {typo, 1, NULL, 0, 0, 0, 0, 0};
	EXPECT(edr_pack_set_filter(r, &g) == EDR_ENOMATCH);
	EXPECT(strstr(edr_last_error(r), "vehicle/stat") != NULL && strstr(edr_last_error(r), "note#driver") != NULL);
	edr_filter h = {NULL, 0, NULL, 0, 5, 4, EDR_FILTER_START | EDR_FILTER_END, 0};
	EXPECT(edr_pack_set_filter(r, &h) == EDR_EINVAL); /* start after end */
	edr_attachment *as;
	CHECK(edr_pack_attachments(r, &as, &n));
	EXPECT(n == 1 && strcmp(as[0].name, "calibration.yaml") == 0 && as[0].len == 10 && memcmp(as[0].data, "gain: 2.5\n", 10) == 0 &&
	       as[0].log_ns == t0 && as[0].create_ns == t0 - 5 && strcmp(as[0].media_type, "application/yaml") == 0);
	CHECK(edr_free(as));
	CHECK(edr_pack_close(r));
	printf("typed ok\n");
	return 0;
}

/* mode_layout: a layout with every kind of member, then the layouts it refuses. */
static int mode_layout(void) {
	const char *src = "struct pose { f64le x (m); f64be y; f32le yaw }\n"
	                  "u8 a; i8 b; bool ok; pad 1; u16be c; i32le d[3] (mV); char vin[8]; pose p; pose ps[2]; f32be z";
	edr_type t = {"x-edr-packed", "every.Kind", "x-edr-layout", (const uint8_t *)src, strlen(src)};
	char *json;
	CHECK(edr_layout_json(&t, &json));
	printf("%s\n", json);
	CHECK(edr_free(json));
	edr_type str = {"x-edr-packed", "s", "x-edr-layout", (const uint8_t *)"u8 a; str8 note", 15};
	EXPECT(edr_layout_json(&str, &json) == EDR_EINVAL && strstr(edr_last_error(0), "note") != NULL);
	edr_type bad = {"x-edr-packed", "b", "x-edr-layout", (const uint8_t *)"u8 a; f32 x", 11};
	EXPECT(edr_layout_json(&bad, &json) == EDR_EINVAL && strstr(edr_last_error(0), "layout:1:") != NULL);
	edr_type js = {"json", "j", "", NULL, 0};
	EXPECT(edr_layout_json(&js, &json) == EDR_EINVAL && strstr(edr_last_error(0), "not a packed layout") != NULL);
	printf("layout ok\n");
	return 0;
}

static void *fail_without_handle(void *arg) {
	(void)arg;
	edr_pack r;
	EXPECT(edr_pack_open_read("/nonexistent/thread.pack", &r) == EDR_EIO);
	EXPECT(strstr(edr_last_error(0), "thread.pack") != NULL);
	EXPECT(edr_pack_read_frame(12345, 1, NULL) == EDR_EBADHANDLE); /* the message is replaced, not leaked */
	return NULL;
}

/* mode_threads: each thread's last error is freed when it exits (under
 * LeakSanitizer, a leak fails the run). */
static int mode_threads(int n) {
	for (int i = 0; i < n; i++) {
		pthread_t t;
		EXPECT(pthread_create(&t, NULL, fail_without_handle, NULL) == 0);
		EXPECT(pthread_join(t, NULL) == 0);
	}
	printf("threads %d ok\n", n);
	return 0;
}

/* mode_bench_filter: as bench, through a filter (one topic, a window). */
static int mode_bench_filter(const char *path, int rounds, const char *from, const char *to, const char *topic) {
	for (int i = 0; i < rounds; i++) {
		int64_t t = now_ns();
		edr_pack r;
		CHECK(edr_pack_open_read(path, &r));
		const char *inc[1] = {topic}, *exc[1];
		edr_filter f;
		parse_filter(&f, from, to, 1, (char **)inc, inc, exc);
		CHECK(edr_pack_set_filter(r, &f));
		edr_frame_view v;
		uint64_t bytes = 0, msgs = 0;
		int rc;
		while ((rc = edr_pack_read_frame(r, 1, &v)) == EDR_OK) {
			for (size_t k = 0; k < v.n_messages; k++) {
				bytes += v.messages[k].data_len;
			}
			msgs += v.n_messages;
		}
		CHECK(rc);
		CHECK(edr_pack_close(r));
		printf("round %d bytes %" PRIu64 " messages %" PRIu64 " ns %" PRId64 "\n", i, bytes, msgs, now_ns() - t);
		fflush(stdout);
	}
	return 0;
}

/* mode_bug: two memory errors in this program's C (run under valgrind
 * only: AddressSanitizer stops at the first). */
static int mode_bug(void) {
	edr_frame f;
	CHECK(edr_frame_create(1, 2, &f)); /* the library is loaded and in use */
	char *p = malloc(16);
	EXPECT(p != NULL);
	p[0] = 1;
	char *volatile q = p;
	free(p);
	volatile int c = q[0]; /* a use after free */
	int *u = malloc(sizeof *u);
	EXPECT(u != NULL);
	volatile int *vu = u;
	if (*vu > 0) { /* a branch on uninitialised memory */
		c++;
	}
	free(u);
	CHECK(edr_frame_destroy(f));
	printf("bug %d\n", c > 1000);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s MODE ARGS\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	if (strcmp(mode, "summary") == 0 && argc == 3) {
		return mode_summary(argv[2]);
	}
	if ((strcmp(mode, "fd") == 0 || strcmp(mode, "callback") == 0 || strcmp(mode, "mem") == 0) && argc == 3) {
		return mode_stream(mode, argv[2]);
	}
	if (strcmp(mode, "seek") == 0 && argc >= 3) {
		return mode_seek(argv[2], argc - 3, argv + 3);
	}
	if (strcmp(mode, "write") == 0 && argc == 3) {
		return mode_write(argv[2]);
	}
	if (strcmp(mode, "corrupt") == 0 && argc == 3) {
		return mode_corrupt(argv[2]);
	}
	if (strcmp(mode, "skip") == 0 && argc == 3) {
		return mode_skip(argv[2]);
	}
	if (strcmp(mode, "shrink") == 0 && argc == 4) {
		return mode_shrink(argv[2], argv[3]);
	}
	if (strcmp(mode, "misuse") == 0 && argc == 3) {
		return mode_misuse(argv[2]);
	}
	if (strcmp(mode, "bench") == 0 && argc == 4) {
		return mode_bench(argv[2], atoi(argv[3]));
	}
	if (strcmp(mode, "types") == 0 && argc == 3) {
		return mode_types(argv[2]);
	}
	if (strcmp(mode, "filter") == 0 && argc >= 5) {
		return mode_filter(argv[2], argv[3], argv[4], argc - 5, argv + 5);
	}
	if (strcmp(mode, "records") == 0 && argc == 7) {
		return mode_records(argv[2], (size_t)atoi(argv[3]), argv[4], argv[5], argv[6]);
	}
	if (strcmp(mode, "typed") == 0 && argc == 3) {
		return mode_typed(argv[2]);
	}
	if (strcmp(mode, "layout") == 0 && argc == 2) {
		return mode_layout();
	}
	if (strcmp(mode, "threads") == 0 && argc == 3) {
		return mode_threads(atoi(argv[2]));
	}
	if (strcmp(mode, "bug") == 0 && argc == 2) {
		return mode_bug();
	}
	if (strcmp(mode, "bench-filter") == 0 && argc == 7) {
		return mode_bench_filter(argv[2], atoi(argv[3]), argv[4], argv[5], argv[6]);
	}
	fprintf(stderr, "%s: unknown mode or arguments\n", argv[0]);
	return 2;
}
