/* Test producer for the C header: publishes COUNT checkable messages.
 *   cproducer pub DIR NAME CHANNEL COUNT MAXLEN CAPACITY
 *   cproducer reserve DIR NAME CHANNEL COUNT MAXLEN CAPACITY
 *       the same messages written in place (edr_shm_reserve of MAXLEN,
 *       edr_shm_commit of the payload's length), every seventh reservation
 *       filled with another checkable payload and dropped
 *   cproducer name NAME CHANNEL        (prints the segment file name)
 *   cproducer packed DIR NAME TYPE LAYOUT COUNT
 *       declares a packed struct in one field (o.layout) and publishes
 *       COUNT messages of "f32le speed; u8 gear; pad 3": speed i/2, gear i%6
 *   cproducer typed DIR NAME TYPE ENCODING SCHEMA_ENCODING SCHEMA_FILE
 *       declares any type with its schema read from a file; publishes one
 *       message "x"
 * Payload i is the same as payloadFor(i, MAXLEN) in the Go tests. */
#define _DEFAULT_SOURCE
#include "edr_shm.h"

#include <stdlib.h>

static uint32_t payload_for(uint8_t *buf, uint64_t i, uint64_t max_len) {
	uint64_t n = 8 + (i * 2654435761ull) % (max_len - 7), x = i * 0x9E3779B97F4A7C15ull + 1, j;
	for (j = 0; j < n; j++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[j] = (uint8_t)x;
	}
	memcpy(buf, &i, 8);
	return (uint32_t)n;
}

int main(int argc, char **argv) {
	if (argc >= 4 && argc % 2 == 0 && strcmp(argv[1], "name") == 0) {
		/* name TOPIC CHANNEL [TOPIC CHANNEL ...]: one file name per line */
		char name[256];
		int i;
		for (i = 2; i + 1 < argc; i += 2) {
			edr_shm_file_name(name, argv[i], argv[i + 1]);
			printf("%s\n", name);
		}
		return 0;
	}
	if (argc == 7 && strcmp(argv[1], "packed") == 0) {
		edr_shm_producer p;
		edr_shm_options o = EDR_SHM_OPTIONS_INIT;
		uint64_t i, count = strtoull(argv[6], NULL, 10);
		int err;
		o.name = argv[3];
		o.type = argv[4];
		o.layout = argv[5]; /* the whole declaration */
		if ((err = edr_shm_create(&p, argv[2], &o)) != 0) {
			fprintf(stderr, "edr_shm_create: %s\n", strerror(-err));
			return 1;
		}
		for (i = 0; i < count; i++) {
			struct { float speed; uint8_t gear, pad[3]; } m; /* packed: 8 bytes, little-endian */
			memset(&m, 0, sizeof m);
			m.speed = (float)i / 2;
			m.gear = (uint8_t)(i % 6);
			edr_shm_publish(&p, (int64_t)i, &m, sizeof m);
		}
		return edr_shm_close(&p) != 0;
	}
	if (argc == 8 && strcmp(argv[1], "typed") == 0) {
		edr_shm_producer p;
		edr_shm_options o = EDR_SHM_OPTIONS_INIT;
		FILE *f = fopen(argv[7], "rb");
		static uint8_t schema[EDR_SHM_MAX_SCHEMA_SIZE];
		size_t n;
		int err;
		if (!f) return 1;
		n = fread(schema, 1, sizeof schema, f);
		fclose(f);
		o.name = argv[3];
		o.type = argv[4];
		o.encoding = argv[5];
		o.schema_encoding = argv[6];
		o.schema = schema;
		o.schema_len = (uint32_t)n;
		if ((err = edr_shm_create(&p, argv[2], &o)) != 0) {
			fprintf(stderr, "edr_shm_create: %s\n", strerror(-err));
			return 1;
		}
		edr_shm_publish(&p, 1, "x", 1);
		return edr_shm_close(&p) != 0;
	}
	if (argc != 8 || (strcmp(argv[1], "pub") != 0 && strcmp(argv[1], "reserve") != 0)) {
		fprintf(stderr, "usage: cproducer pub|reserve DIR NAME CHANNEL COUNT MAXLEN CAPACITY | name NAME CHANNEL\n");
		return 2;
	}
	edr_shm_producer p;
	edr_shm_options o = EDR_SHM_OPTIONS_INIT;
	o.name = argv[3];
	o.channel = argv[4];
	o.type = "test/Checkable";
	o.capacity = (uint32_t)strtoul(argv[7], NULL, 10);
	o.heartbeat_period_ns = 1000000000;
	uint64_t count = strtoull(argv[5], NULL, 10), max_len = strtoull(argv[6], NULL, 10), i;
	uint8_t *buf = malloc(max_len);
	int err = edr_shm_create(&p, argv[2], &o);
	if (err) {
		fprintf(stderr, "edr_shm_create: %s\n", strerror(-err));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (getchar() == EOF) return 1; /* wait for "go" */
	int in_place = strcmp(argv[1], "reserve") == 0;
	for (i = 0; i < count; i++) {
		uint32_t n;
		void *m;
		if (!in_place) {
			n = payload_for(buf, i, max_len);
			err = edr_shm_publish(&p, (int64_t)i, buf, n);
		} else {
			if (i % 7 == 0) {
				if ((err = edr_shm_reserve(&p, (uint32_t)max_len, &m)) != 0) break;
				payload_for(m, i + count, max_len); /* checkable, not a message */
			}
			if ((err = edr_shm_reserve(&p, (uint32_t)max_len, &m)) == 0)
				err = edr_shm_commit(&p, (int64_t)i, payload_for(m, i, max_len));
		}
		if (err != 0) {
			fprintf(stderr, "%s of message %llu: %s\n", argv[1], (unsigned long long)i, strerror(-err));
			return 1;
		}
		if ((i & 0xffff) == 0) edr_shm_heartbeat(&p);
	}
	if (in_place && (err = edr_shm_commit(&p, 0, 0)) != -EINVAL) {
		fprintf(stderr, "commit without a reservation: %d, want -EINVAL\n", err);
		return 1;
	}
	if ((err = edr_shm_publish(&p, 0, buf, p.max_payload + 1)) != -EMSGSIZE) {
		fprintf(stderr, "oversize publish: %d, want -EMSGSIZE\n", err);
		return 1;
	}
	if ((err = edr_shm_close(&p)) != 0) {
		fprintf(stderr, "edr_shm_close: %s\n", strerror(-err));
		return 1;
	}
	free(buf);
	return 0;
}
