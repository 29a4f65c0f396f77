/* Test producer for the C header: publishes COUNT checkable messages.
 *   cproducer pub DIR NAME CHANNEL COUNT MAXLEN CAPACITY
 *   cproducer name NAME CHANNEL        (prints the segment file name)
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
	if (argc == 4 && strcmp(argv[1], "name") == 0) {
		char name[256];
		edr_shm_file_name(name, argv[2], argv[3]);
		printf("%s\n", name);
		return 0;
	}
	if (argc != 8 || strcmp(argv[1], "pub") != 0) {
		fprintf(stderr, "usage: cproducer pub DIR NAME CHANNEL COUNT MAXLEN CAPACITY | name NAME CHANNEL\n");
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
	for (i = 0; i < count; i++) {
		uint32_t n = payload_for(buf, i, max_len);
		if ((err = edr_shm_publish(&p, (int64_t)i, buf, n)) != 0) {
			fprintf(stderr, "edr_shm_publish: %s\n", strerror(-err));
			return 1;
		}
		if ((i & 0xffff) == 0) edr_shm_heartbeat(&p);
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
