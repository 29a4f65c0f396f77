/*
 * edr_shm.h — header-only C99 producer for edr-lite shared-memory segments.
 *
 * Implements the producer side of shm/FORMAT.md (versions 1 and 2, with the
 * doorbell of the segment directory), exactly like
 * the Go producer (shm.NewProducer): one segment file per topic in a
 * directory (default /dev/shm/edr), a ring that the producer overwrites when
 * the recorder lags — publishing never blocks and never waits for the
 * recorder, and allocates nothing.
 *
 * Needs Linux, a little-endian CPU and GCC or Clang (for the __atomic
 * builtins); no library beyond libc. Define _DEFAULT_SOURCE (or
 * _GNU_SOURCE) before including any system header, e.g. with
 * -D_DEFAULT_SOURCE, when compiling with -std=c99.
 *
 *   edr_shm_producer p;
 *   edr_shm_options o = EDR_SHM_OPTIONS_INIT;
 *   o.name = "vehicle/speed";
 *   o.type = "vehicle.Speed";                                 // the type's name
 *   o.layout = "f32le speed (m/s); u8 gear; pad 3";           // a packed struct: one line
 *   if (edr_shm_create(&p, "/dev/shm/edr", &o) != 0) ...;   // 0 or -errno
 *   edr_shm_publish(&p, gen_ns, buf, len);                    // 0, -EMSGSIZE
 *   void *m; if (edr_shm_reserve(&p, max_len, &m) == 0) {     // or write in place:
 *       len = encode_into(m, max_len);                         //   the message's bytes
 *       edr_shm_commit(&p, gen_ns, len); }                     //   len <= max_len
 *   edr_shm_heartbeat(&p);                                    // if heartbeat_period_ns > 0
 *   edr_shm_close(&p);                                        // marks closed
 *
 * The topic's type is declared once, at creation: o.layout for a packed
 * struct (edr-lite's layout language, docs/schemas.md), or o.encoding with
 * o.schema_encoding, o.schema and o.schema_len for any other (e.g.
 * "protobuf", "protobuf" and a serialized FileDescriptorSet; "json",
 * "jsonschema" and a JSON Schema; "cdr", "ros2msg" and the definitions).
 * A producer that declares no encoding writes a version 1 segment, which
 * every recorder reads. The recorder checks the schema; one it refuses is
 * recorded as raw bytes and says why in its status.
 *
 * A producer is not safe for concurrent use: publish (reserve, commit) from
 * one thread (edr_shm_heartbeat may run concurrently with edr_shm_publish).
 */
#ifndef EDR_SHM_H
#define EDR_SHM_H

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "edr_shm.h: the segment format is little-endian"
#endif

/* Layout constants: identical to shm/layout.go (a Go test checks). */
#define EDR_SHM_VERSION 2
#define EDR_SHM_VERSION_UNTYPED 1
#define EDR_SHM_HEADER_SIZE 4096
#define EDR_SHM_RECORD_HEADER_SIZE 24
#define EDR_SHM_RECORD_ALIGN 8
#define EDR_SHM_MIN_CAPACITY 4096
#define EDR_SHM_MAX_CAPACITY (1u << 30)
#define EDR_SHM_DEFAULT_CAPACITY (1u << 20)
#define EDR_SHM_MAX_NAME_LEN 256
#define EDR_SHM_MAX_TYPE_LEN 128
#define EDR_SHM_MAX_CHANNEL_LEN 64
#define EDR_SHM_MAX_ENCODING_LEN 64
#define EDR_SHM_MAX_SCHEMA_SIZE (4u << 20)

#define EDR_SHM_OFF_MAGIC 0
#define EDR_SHM_OFF_VERSION 8
#define EDR_SHM_OFF_HEADER_SIZE 12
#define EDR_SHM_OFF_TOTAL_SIZE 16
#define EDR_SHM_OFF_CAPACITY 24
#define EDR_SHM_OFF_MAX_PAYLOAD 32
#define EDR_SHM_OFF_FLAGS 36
#define EDR_SHM_OFF_PID 40
#define EDR_SHM_OFF_UID 44
#define EDR_SHM_OFF_START_NS 48
#define EDR_SHM_OFF_HEARTBEAT_PERIOD 56
#define EDR_SHM_OFF_NAME_LEN 64
#define EDR_SHM_OFF_TYPE_LEN 66
#define EDR_SHM_OFF_CHANNEL_LEN 68
#define EDR_SHM_OFF_ENCODING_LEN 70
#define EDR_SHM_OFF_SCHEMA_ENCODING_LEN 72
#define EDR_SHM_OFF_SCHEMA_LEN 76
#define EDR_SHM_OFF_NAME 96
#define EDR_SHM_OFF_TYPE 352
#define EDR_SHM_OFF_CHANNEL 480
#define EDR_SHM_OFF_ENCODING 544
#define EDR_SHM_OFF_SCHEMA_ENCODING 608
#define EDR_SHM_OFF_WRITE_CURSOR 1024
#define EDR_SHM_OFF_TAIL_CURSOR 1032
#define EDR_SHM_OFF_NEXT_SEQ 1040
#define EDR_SHM_OFF_OVERSIZE 1048
#define EDR_SHM_OFF_HEARTBEAT_NS 1152
#define EDR_SHM_OFF_STATE 1160
#define EDR_SHM_OFF_WAKE_CAPS 1164
#define EDR_SHM_OFF_DOORBELL_INO 1168
#define EDR_SHM_OFF_WAITERS 1280
#define EDR_SHM_OFF_BELL_SLOT 1284

/* The directory's doorbell (FORMAT.md, "Waking the consumer"). */
#define EDR_SHM_DOORBELL_NAME ".doorbell"
#define EDR_SHM_DOORBELL_SIZE 4096
#define EDR_SHM_DOORBELL_VERSION 1
#define EDR_SHM_DOORBELL_SLOTS 16384
#define EDR_SHM_DOORBELL_OFF_RINGS 64
#define EDR_SHM_DOORBELL_OFF_HINTS 2048
#define EDR_SHM_WAKE_DOORBELL 1
#define EDR_SHM_WAIT_CURSOR 1
#define EDR_SHM_WAIT_DOORBELL 2
#define EDR_SHM_PID_MAX_LIMIT 4194304

#define EDR_SHM_KIND_MESSAGE 1
#define EDR_SHM_KIND_PADDING 2
#define EDR_SHM_STATE_LIVE 1
#define EDR_SHM_STATE_CLOSED 2
#define EDR_SHM_MAX_ESCAPED_NAME 200
#define EDR_SHM_TAIL_SLACK 16
#define EDR_SHM_SUFFIX ".seg"

typedef struct edr_shm_options {
	const char *name;            /* required, 1..256 bytes UTF-8, no control bytes */
	const char *type;            /* the type (schema) name, 0..128 bytes, may be NULL */
	const char *channel;         /* 0..64 bytes, may be NULL */
	uint32_t capacity;           /* ring bytes, rounded up to a power of two; 0 = 1 MiB */
	uint32_t max_payload;        /* 0 = capacity/2 - 24 */
	mode_t mode;                 /* 0 = 0600 (umask not applied) */
	gid_t gid;                   /* > 0: chown the file to this group */
	int64_t heartbeat_period_ns; /* 0 = no heartbeat promised */
	int unlink_on_close;         /* remove the file in edr_shm_close */
	/* The topic's type (a version 2 segment); all NULL/0: none declared. */
	const char *layout;          /* a packed struct's layout: sets encoding "x-edr-packed",
	                                schema encoding "x-edr-layout" and the schema */
	const char *encoding;        /* message encoding, 1..64 printable ASCII: "protobuf", "json", ... */
	const char *schema_encoding; /* 0..64 printable ASCII: "protobuf", "jsonschema", "ros2msg", ... */
	const void *schema;          /* the schema bytes, may be NULL */
	uint32_t schema_len;         /* their length, at most EDR_SHM_MAX_SCHEMA_SIZE */
} edr_shm_options;

#define EDR_SHM_OPTIONS_INIT {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

typedef struct edr_shm_producer {
	int fd;
	uint8_t *mem;
	uint8_t *ring;
	uint8_t *bell; /* the directory's doorbell, NULL when it could not be opened */
	uint64_t hdr;  /* bytes before the ring: the header and the schema area */
	uint64_t cap, mask, w, tail, seq;
	uint32_t max_payload;
	int closed, unlink_on_close;
	int reserved;              /* a reservation is open (edr_shm_reserve) */
	uint32_t res_len;          /* its payload bytes */
	uint64_t res_pad;          /* its padding before the record */
	dev_t dev;
	ino_t ino;
	char path[4096];
} edr_shm_producer;

/* ---- little helpers ---------------------------------------------------- */

static inline void edr_shm__put16(uint8_t *b, uint16_t v) { memcpy(b, &v, 2); }
static inline void edr_shm__put32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }
static inline void edr_shm__put64(uint8_t *b, uint64_t v) { memcpy(b, &v, 8); }
static inline uint32_t edr_shm__get32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return v; }
#define EDR_SHM__A64(mem, off) ((uint64_t *)(void *)((mem) + (off)))
#define EDR_SHM__A32(mem, off) ((uint32_t *)(void *)((mem) + (off)))

static inline int64_t edr_shm_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t edr_shm__record_size(uint32_t n) {
	return ((uint64_t)n + EDR_SHM_RECORD_HEADER_SIZE + EDR_SHM_RECORD_ALIGN - 1) & ~(uint64_t)(EDR_SHM_RECORD_ALIGN - 1);
}

static inline int edr_shm__check_text(const char *s, size_t max, size_t min) {
	size_t n = s ? strlen(s) : 0, i;
	if (n < min || n > max) return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f) return -EINVAL;
	}
	return 0; /* UTF-8 validity is the caller's promise; the consumer checks */
}

static inline int edr_shm__check_ascii(const char *s, size_t max, size_t min) {
	size_t n = s ? strlen(s) : 0, i;
	if (n < min || n > max) return -EINVAL;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return -EINVAL;
	return 0;
}

static inline size_t edr_shm__escape(char *out, size_t at, size_t cap, const char *s) {
	static const char hex[] = "0123456789ABCDEF";
	size_t i;
	for (i = 0; s && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		           c == '_' || c == '-' || (c == '.' && i > 0);
		if (keep) {
			if (at + 1 < cap) out[at] = (char)c;
			at++;
		} else {
			if (at + 3 < cap) { out[at] = '%'; out[at + 1] = hex[c >> 4]; out[at + 2] = hex[c & 15]; }
			at += 3;
		}
	}
	return at;
}

/* edr_shm_file_name writes the segment file name of (name, channel) to out
 * (at least 256 bytes), exactly as shm.SegmentFileName does. */
static inline void edr_shm_file_name(char out[256], const char *name, const char *channel) {
	char buf[3 * (EDR_SHM_MAX_NAME_LEN + EDR_SHM_MAX_CHANNEL_LEN) + 8];
	size_t n = edr_shm__escape(buf, 0, sizeof buf, name);
	buf[n++] = '~';
	n = edr_shm__escape(buf, n, sizeof buf, channel);
	buf[n] = 0;
	if (n > EDR_SHM_MAX_ESCAPED_NAME) {
		uint64_t h = 14695981039346656037ull;
		const char *parts[3];
		int k;
		size_t i;
		parts[0] = name; parts[1] = "~"; parts[2] = channel ? channel : "";
		for (k = 0; k < 3; k++)
			for (i = 0; parts[k][i]; i++) { h ^= (unsigned char)parts[k][i]; h *= 1099511628211ull; }
		snprintf(out, 256, "%.*s#%016llx%s", EDR_SHM_MAX_ESCAPED_NAME - 17, buf, (unsigned long long)h, EDR_SHM_SUFFIX);
		return;
	}
	snprintf(out, 256, "%.*s%s", EDR_SHM_MAX_ESCAPED_NAME, buf, EDR_SHM_SUFFIX);
}

/* A pid that can name a producer of our pid namespace: not 0, not init
 * (in a container any producer may be pid 1), not beyond PID_MAX_LIMIT. */
static inline int edr_shm__usable_pid(uint32_t pid) { return pid > 1 && pid <= EDR_SHM_PID_MAX_LIMIT; }

/* A producer still holds path (shm.segmentInUse): live, its pid (when
 * usable) exists, and its heartbeat, when promised, is at most two periods
 * old. A segment whose pid cannot be checked is held only by heartbeats.
 * (The Go producer also tells a pid reused by a newer process apart.) */
static inline int edr_shm__in_use(const char *path) {
	uint8_t b[EDR_SHM_HEADER_SIZE];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t n;
	uint32_t state, pid;
	int64_t period, hb;
	if (fd < 0) return 0;
	n = pread(fd, b, sizeof b, 0);
	close(fd);
	if (n != (ssize_t)sizeof b || memcmp(b, "EDRSHM\0\1", 8) != 0) return 0;
	state = edr_shm__get32(b + EDR_SHM_OFF_STATE);
	pid = edr_shm__get32(b + EDR_SHM_OFF_PID);
	memcpy(&period, b + EDR_SHM_OFF_HEARTBEAT_PERIOD, 8);
	memcpy(&hb, b + EDR_SHM_OFF_HEARTBEAT_NS, 8);
	if (state != EDR_SHM_STATE_LIVE) return 0;
	if (edr_shm__usable_pid(pid) && kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 0;
	if (period > 0) return edr_shm_now_ns() - hb <= 2 * period;
	return edr_shm__usable_pid(pid);
}

/* Maps dir's doorbell read-write, creating it (mode, gid) when missing:
 * written to a temporary file and linked into place, so that a half-made
 * doorbell is never seen. Returns the mapping or NULL, and its inode. */
static inline uint8_t *edr_shm__open_doorbell(const char *dir, mode_t mode, gid_t gid, uint64_t *ino) {
	char path[4096], tmp[4096];
	uint8_t b[EDR_SHM_DOORBELL_SIZE], *m;
	struct stat st;
	int fd, tries;
	uint32_t v;
	if (snprintf(path, sizeof path, "%s/" EDR_SHM_DOORBELL_NAME, dir) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/" EDR_SHM_DOORBELL_NAME ".%ld.tmp", dir, (long)getpid()) >= (int)sizeof tmp)
		return NULL;
	for (tries = 0; tries < 3; tries++) {
		fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) break;
		if (errno != ENOENT) return NULL;
		unlink(tmp);
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0) return NULL;
		memset(b, 0, sizeof b);
		memcpy(b, "EDRBELL\1", 8);
		v = EDR_SHM_DOORBELL_VERSION; memcpy(b + 8, &v, 4);
		v = EDR_SHM_DOORBELL_SLOTS; memcpy(b + 12, &v, 4);
		if (fchmod(fd, mode) != 0 || (gid > 0 && fchown(fd, (uid_t)-1, gid) != 0) ||
		    pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b) {
			close(fd);
			unlink(tmp);
			return NULL;
		}
		close(fd);
		fd = -1;
		if (link(tmp, path) != 0 && errno != EEXIST) { unlink(tmp); return NULL; }
		unlink(tmp);
	}
	if (fd < 0) return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != EDR_SHM_DOORBELL_SIZE) { close(fd); return NULL; }
	m = (uint8_t *)mmap(NULL, EDR_SHM_DOORBELL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) return NULL;
	if (memcmp(m, "EDRBELL\1", 8) != 0 || edr_shm__get32(m + 8) != EDR_SHM_DOORBELL_VERSION ||
	    edr_shm__get32(m + 12) != EDR_SHM_DOORBELL_SLOTS) {
		munmap(m, EDR_SHM_DOORBELL_SIZE);
		return NULL;
	}
	*ino = (uint64_t)st.st_ino;
	return m;
}

/* Wakes the consumers asleep as the bits of w say: on the doorbell (its hint
 * bit, then a ring), on the write cursor, or both (two consumers of one
 * segment). */
static inline void edr_shm__wake(edr_shm_producer *p, uint32_t w) {
	int rang = 0;
	if (w == 0) return;
	if ((w & EDR_SHM_WAIT_DOORBELL) && p->bell) {
		uint32_t slot = __atomic_load_n(EDR_SHM__A32(p->mem, EDR_SHM_OFF_BELL_SLOT), __ATOMIC_SEQ_CST);
		uint32_t *rings = EDR_SHM__A32(p->bell, EDR_SHM_DOORBELL_OFF_RINGS);
		if (slot < EDR_SHM_DOORBELL_SLOTS)
			__atomic_fetch_or(EDR_SHM__A32(p->bell, EDR_SHM_DOORBELL_OFF_HINTS + 4 * (slot / 32)), 1u << (slot % 32), __ATOMIC_SEQ_CST);
		__atomic_fetch_add(rings, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, rings, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
		rang = 1;
	}
	if ((w & ~(uint32_t)EDR_SHM_WAIT_DOORBELL) || !rang)
		syscall(SYS_futex, EDR_SHM__A32(p->mem, EDR_SHM_OFF_WRITE_CURSOR), FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* ---- API --------------------------------------------------------------- */

/* edr_shm_create creates the segment for o->name/o->channel in dir (which
 * must exist). Returns 0, or -errno: -EINVAL bad options, -EBUSY a live
 * producer owns the topic, others from the system calls. */
static inline int edr_shm_create(edr_shm_producer *p, const char *dir, const edr_shm_options *o) {
	char base[256], tmp[4096];
	uint64_t cap = o->capacity ? o->capacity : EDR_SHM_DEFAULT_CAPACITY, c = EDR_SHM_MIN_CAPACITY, total, hdr;
	uint32_t maxp, slen = o->schema_len;
	mode_t mode = o->mode ? o->mode : 0600;
	const char *enc = o->encoding, *senc = o->schema_encoding;
	const void *schema = o->schema;
	uint8_t *h;
	struct stat st;
	int err;
	memset(p, 0, sizeof *p);
	p->fd = -1;
	if (o->layout) { /* a packed struct in one field */
		if (enc || senc || schema || slen) return -EINVAL;
		enc = "x-edr-packed";
		senc = "x-edr-layout";
		schema = o->layout;
		slen = (uint32_t)strlen(o->layout);
		if (slen == 0 || strlen(o->layout) > EDR_SHM_MAX_SCHEMA_SIZE) return -EINVAL;
	}
	if (edr_shm__check_text(o->name, EDR_SHM_MAX_NAME_LEN, 1) || edr_shm__check_text(o->type, EDR_SHM_MAX_TYPE_LEN, 0) ||
	    edr_shm__check_text(o->channel, EDR_SHM_MAX_CHANNEL_LEN, 0) || cap > EDR_SHM_MAX_CAPACITY ||
	    edr_shm__check_ascii(enc, EDR_SHM_MAX_ENCODING_LEN, 0) || edr_shm__check_ascii(senc, EDR_SHM_MAX_ENCODING_LEN, 0) ||
	    slen > EDR_SHM_MAX_SCHEMA_SIZE || (slen && !schema) || (!enc && (senc || slen)) || (enc && !*enc))
		return -EINVAL;
	/* version 2 when a type is declared: the schema area sits between the
	 * header and the ring, rounded up to a page */
	hdr = EDR_SHM_HEADER_SIZE + (enc ? ((uint64_t)slen + EDR_SHM_HEADER_SIZE - 1) / EDR_SHM_HEADER_SIZE * EDR_SHM_HEADER_SIZE : 0);
	while (c < cap) c <<= 1;
	cap = c;
	maxp = o->max_payload ? o->max_payload : (uint32_t)(cap / 2 - EDR_SHM_RECORD_HEADER_SIZE);
	if (maxp > cap / 2 - EDR_SHM_RECORD_HEADER_SIZE) return -EINVAL;
	edr_shm_file_name(base, o->name, o->channel);
	if (snprintf(p->path, sizeof p->path, "%s/%s", dir, base) >= (int)sizeof p->path) return -ENAMETOOLONG;
	if (snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, base, (long)getpid()) >= (int)sizeof tmp) return -ENAMETOOLONG;
	if (edr_shm__in_use(p->path)) return -EBUSY;
	unlink(tmp);
	p->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (p->fd < 0) return -errno;
	total = hdr + cap;
	if (fchmod(p->fd, mode) != 0 || (o->gid > 0 && fchown(p->fd, (uid_t)-1, o->gid) != 0) ||
	    ftruncate(p->fd, (off_t)total) != 0)
		goto fail;
	p->mem = (uint8_t *)mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->mem == MAP_FAILED) { p->mem = NULL; goto fail; }
	h = p->mem;
	memcpy(h + EDR_SHM_OFF_MAGIC, "EDRSHM\0\1", 8);
	edr_shm__put32(h + EDR_SHM_OFF_VERSION, enc ? EDR_SHM_VERSION : EDR_SHM_VERSION_UNTYPED);
	edr_shm__put32(h + EDR_SHM_OFF_HEADER_SIZE, (uint32_t)hdr);
	edr_shm__put64(h + EDR_SHM_OFF_TOTAL_SIZE, total);
	edr_shm__put64(h + EDR_SHM_OFF_CAPACITY, cap);
	edr_shm__put32(h + EDR_SHM_OFF_MAX_PAYLOAD, maxp);
	edr_shm__put32(h + EDR_SHM_OFF_PID, (uint32_t)getpid());
	edr_shm__put32(h + EDR_SHM_OFF_UID, (uint32_t)geteuid());
	edr_shm__put64(h + EDR_SHM_OFF_START_NS, (uint64_t)edr_shm_now_ns());
	edr_shm__put64(h + EDR_SHM_OFF_HEARTBEAT_PERIOD, (uint64_t)o->heartbeat_period_ns);
	edr_shm__put16(h + EDR_SHM_OFF_NAME_LEN, (uint16_t)strlen(o->name));
	edr_shm__put16(h + EDR_SHM_OFF_TYPE_LEN, (uint16_t)(o->type ? strlen(o->type) : 0));
	edr_shm__put16(h + EDR_SHM_OFF_CHANNEL_LEN, (uint16_t)(o->channel ? strlen(o->channel) : 0));
	memcpy(h + EDR_SHM_OFF_NAME, o->name, strlen(o->name));
	if (o->type) memcpy(h + EDR_SHM_OFF_TYPE, o->type, strlen(o->type));
	if (o->channel) memcpy(h + EDR_SHM_OFF_CHANNEL, o->channel, strlen(o->channel));
	if (enc) {
		edr_shm__put16(h + EDR_SHM_OFF_ENCODING_LEN, (uint16_t)strlen(enc));
		edr_shm__put16(h + EDR_SHM_OFF_SCHEMA_ENCODING_LEN, (uint16_t)(senc ? strlen(senc) : 0));
		edr_shm__put32(h + EDR_SHM_OFF_SCHEMA_LEN, slen);
		memcpy(h + EDR_SHM_OFF_ENCODING, enc, strlen(enc));
		if (senc) memcpy(h + EDR_SHM_OFF_SCHEMA_ENCODING, senc, strlen(senc));
		if (slen) memcpy(h + EDR_SHM_HEADER_SIZE, schema, slen);
	}
	edr_shm__put64(h + EDR_SHM_OFF_HEARTBEAT_NS, (uint64_t)edr_shm_now_ns());
	edr_shm__put32(h + EDR_SHM_OFF_STATE, EDR_SHM_STATE_LIVE);
	p->ring = p->mem + hdr;
	p->hdr = hdr;
	memset(p->ring, 0, (size_t)cap); /* prefault: no page faults in publish */
	p->cap = cap;
	p->mask = cap - 1;
	p->max_payload = maxp;
	p->unlink_on_close = o->unlink_on_close;
	if (fstat(p->fd, &st) == 0) { p->dev = st.st_dev; p->ino = st.st_ino; }
	{ /* the doorbell: without it the consumer wakes on the write cursor */
		uint64_t bino = 0;
		p->bell = edr_shm__open_doorbell(dir, mode, o->gid, &bino);
		if (p->bell) {
			edr_shm__put64(h + EDR_SHM_OFF_DOORBELL_INO, bino);
			edr_shm__put32(h + EDR_SHM_OFF_WAKE_CAPS, EDR_SHM_WAKE_DOORBELL);
		}
	}
	close(p->fd); /* the mapping is all a producer needs */
	p->fd = -1;
	if (rename(tmp, p->path) != 0) goto fail;
	return 0;
fail:
	err = -errno;
	if (p->mem) munmap(p->mem, (size_t)total);
	if (p->bell) munmap(p->bell, EDR_SHM_DOORBELL_SIZE);
	if (p->fd >= 0) close(p->fd);
	unlink(tmp);
	p->mem = NULL;
	p->bell = NULL;
	p->fd = -1;
	return err;
}

/* edr_shm_reserve lends the producer the ring bytes of its next message,
 * len bytes at *buf, to write the message in place (a camera frame decoded
 * or a struct serialized straight into the segment) instead of writing it
 * elsewhere and copying it in with edr_shm_publish; then edr_shm_commit.
 * Nothing of it is visible to the recorder before the commit. A reservation
 * not committed is dropped by the next reserve or publish, but the room it
 * made stays made (the oldest records may already be overwritten, counted
 * as lost by the recorder). *buf is not to be used after the commit, the
 * next reserve or publish, or edr_shm_close. Never blocks, never allocates.
 * Returns 0, -EMSGSIZE (len > max_payload, counted) or -EPIPE (closed). */
static inline int edr_shm_reserve(edr_shm_producer *p, uint32_t len, void **buf) {
	uint64_t rec, off, pad = 0, end, t;
	p->reserved = 0;
	*buf = NULL;
	if (p->closed || !p->mem) return -EPIPE;
	if (len > p->max_payload) {
		uint64_t *ov = EDR_SHM__A64(p->mem, EDR_SHM_OFF_OVERSIZE);
		__atomic_store_n(ov, __atomic_load_n(ov, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
		return -EMSGSIZE;
	}
	rec = edr_shm__record_size(len);
	off = p->w & p->mask;
	if (rec > p->cap - off) pad = p->cap - off;
	end = p->w + pad + rec;
	if (end - p->tail > p->cap) {
		uint64_t first = p->w + pad, want = end - (p->cap - p->cap / EDR_SHM_TAIL_SLACK);
		t = p->tail;
		if (want > first) want = first;
		while (t < want) {
			uint64_t toff = t & p->mask, size = p->cap - toff;
			if (t == p->w) { t = first; break; } /* nothing valid beyond the write cursor */
			if (edr_shm__get32(p->ring + toff + 4) != EDR_SHM_KIND_PADDING)
				size = edr_shm__record_size(edr_shm__get32(p->ring + toff));
			if (size > p->cap - toff || size > p->w - t) { t = first; break; } /* scribbled on */
			t += size;
		}
		p->tail = t;
		/* full fence: the new tail is visible before any overwritten byte */
		__atomic_exchange_n(EDR_SHM__A64(p->mem, EDR_SHM_OFF_TAIL_CURSOR), t, __ATOMIC_SEQ_CST);
	}
	p->reserved = 1;
	p->res_len = len;
	p->res_pad = pad;
	*buf = p->ring + ((p->w + pad) & p->mask) + EDR_SHM_RECORD_HEADER_SIZE;
	return 0;
}

/* edr_shm_commit publishes the reserved message with producer time gen_ns
 * and its first len bytes as the payload (len may be less than reserved).
 * Returns 0, -EINVAL (no reservation open, or len beyond it) or -EPIPE. */
static inline int edr_shm_commit(edr_shm_producer *p, int64_t gen_ns, uint32_t len) {
	uint64_t off, end;
	uint8_t *r;
	if (p->closed || !p->mem) return -EPIPE;
	if (!p->reserved || len > p->res_len) return -EINVAL;
	p->reserved = 0;
	off = p->w & p->mask;
	if (p->res_pad) {
		edr_shm__put32(p->ring + off, (uint32_t)p->res_pad);
		edr_shm__put32(p->ring + off + 4, EDR_SHM_KIND_PADDING);
		off = 0;
	}
	r = p->ring + off;
	edr_shm__put32(r, len);
	edr_shm__put32(r + 4, EDR_SHM_KIND_MESSAGE);
	edr_shm__put64(r + 8, p->seq);
	edr_shm__put64(r + 16, (uint64_t)gen_ns);
	end = p->w + p->res_pad + edr_shm__record_size(len);
	p->seq++;
	p->w = end;
	__atomic_store_n(EDR_SHM__A64(p->mem, EDR_SHM_OFF_NEXT_SEQ), p->seq, __ATOMIC_RELAXED); /* monitoring only */
	__atomic_store_n(EDR_SHM__A64(p->mem, EDR_SHM_OFF_WRITE_CURSOR), end, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(EDR_SHM__A32(p->mem, EDR_SHM_OFF_WAITERS), __ATOMIC_SEQ_CST) != 0)
		edr_shm__wake(p, __atomic_exchange_n(EDR_SHM__A32(p->mem, EDR_SHM_OFF_WAITERS), 0, __ATOMIC_SEQ_CST));
	return 0;
}

/* edr_shm_publish appends one message (edr_shm_reserve, a copy of payload,
 * edr_shm_commit): never blocks, never allocates.
 * Returns 0, -EMSGSIZE (len > max_payload, counted) or -EPIPE (closed). */
static inline int edr_shm_publish(edr_shm_producer *p, int64_t gen_ns, const void *payload, uint32_t len) {
	void *buf;
	int err = edr_shm_reserve(p, len, &buf);
	if (err) return err;
	if (len) memcpy(buf, payload, len);
	return edr_shm_commit(p, gen_ns, len);
}

/* edr_shm_heartbeat stamps the heartbeat time (call it at least every
 * heartbeat_period_ns when that is non-zero). */
static inline void edr_shm_heartbeat(edr_shm_producer *p) {
	if (p->mem && !p->closed)
		__atomic_store_n((int64_t *)(void *)(p->mem + EDR_SHM_OFF_HEARTBEAT_NS), edr_shm_now_ns(), __ATOMIC_RELEASE);
}

/* edr_shm_close marks the segment closed, wakes the consumer and unmaps it;
 * the consumer drains and removes the file (or the producer removes it now
 * with unlink_on_close). Returns 0 or -errno. */
static inline int edr_shm_close(edr_shm_producer *p) {
	int err = 0;
	struct stat st;
	if (p->closed || !p->mem) return 0;
	__atomic_store_n(EDR_SHM__A32(p->mem, EDR_SHM_OFF_STATE), EDR_SHM_STATE_CLOSED, __ATOMIC_SEQ_CST);
	edr_shm__wake(p, __atomic_exchange_n(EDR_SHM__A32(p->mem, EDR_SHM_OFF_WAITERS), 0, __ATOMIC_SEQ_CST));
	/* a consumer older than the doorbell may sleep on the write cursor */
	syscall(SYS_futex, EDR_SHM__A32(p->mem, EDR_SHM_OFF_WRITE_CURSOR), FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
	p->closed = 1;
	if (p->unlink_on_close && lstat(p->path, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino && unlink(p->path) != 0)
		err = -errno;
	if (munmap(p->mem, (size_t)(p->hdr + p->cap)) != 0 && !err) err = -errno;
	if (p->bell && munmap(p->bell, EDR_SHM_DOORBELL_SIZE) != 0 && !err) err = -errno;
	p->mem = NULL;
	p->bell = NULL;
	p->fd = -1;
	return err;
}

#endif /* EDR_SHM_H */
