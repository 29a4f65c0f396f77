/*
 * The C side of sdk/sdk_test.go: each mode exercises libedrpack and prints
 * what the Go test compares with the Go API and the edr-lite binary.
 *
 *   summary FILE          per topic: messages, data bytes, FNV-1a 64 of the payloads in order
 *   fd FILE | callback FILE | mem FILE   the same, read as a stream from a file descriptor,
 *                         through a read callback, or from memory
 *   seek FILE T...        for each time: the frame edr_pack_seek_time lands on
 *   write OUT             builds frames every way the API offers and writes a pack file
 *   corrupt FILE          reads a damaged file: must end in an error code with an offset
 *   misuse                wrong handles, double close, double free, seek on a stream...
 *   bench FILE ROUNDS     times whole-file reads: bytes and nanoseconds per round
 *
 * Exit status 0 when the mode did what it should; the output says what it saw.
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <inttypes.h>
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
			printf("seek %" PRId64 " eof\n", t);
			continue;
		}
		printf("seek %" PRId64 " offset %" PRId64 " id %" PRIu64 " time %" PRId64 "\n", t, v.offset, v.id, v.time_ns);
		if (v.offset >= 0) { /* tell / seek back to it reads it again */
			CHECK(edr_pack_seek(r, v.offset));
			edr_frame_view w;
			CHECK(edr_pack_read_frame(r, 0, &w));
			EXPECT(w.id == v.id && w.time_ns == v.time_ns);
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
	if (strcmp(mode, "misuse") == 0 && argc == 3) {
		return mode_misuse(argv[2]);
	}
	if (strcmp(mode, "bench") == 0 && argc == 4) {
		return mode_bench(argv[2], atoi(argv[3]));
	}
	fprintf(stderr, "%s: unknown mode or arguments\n", argv[0]);
	return 2;
}
