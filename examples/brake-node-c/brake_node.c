/* brake_node: the C twin of examples/brake-node, against the header-only
 * producer shm/include/edr_shm.h. It receives the vehicle speed as UDP
 * datagrams (f32le m/s, as "edr-lite replay --to udp:HOST:PORT" sends the
 * recorded payload) and publishes, for every datagram, the braking decision
 * on planner/brake over shared memory in the layout of
 * examples/brake-node/brake.layout:
 *
 *   f32le speed (m/s); f32le obstacle (m); f32le command; u8 brake
 *
 * command = (speed^2 - threshold^2) * gain, clamped to 0..1, computed in
 * float with every step rounded (build with -ffp-contract=off), so its
 * bytes equal the Go node's; obstacle is NaN (this node reads no obstacle).
 * The producer time of a decision is the time the datagram was received.
 *
 *   cc -std=c99 -O2 -ffp-contract=off -I shm/include \
 *      -o brake_node examples/brake-node-c/brake_node.c
 *   ./brake_node SHM_DIR UDP_PORT [THRESHOLD [GAIN]]
 *
 * THRESHOLD defaults to EDR_BRAKE_THRESHOLD, else 18; GAIN to 0.01. It runs
 * until SIGINT or SIGTERM and prints how many datagrams it handled.
 */
#define _GNU_SOURCE
#include "edr_shm.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static void put_f32(uint8_t *b, float v) { memcpy(b, &v, 4); } /* little-endian hosts only, as edr_shm.h */

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: %s SHM_DIR UDP_PORT [THRESHOLD [GAIN]]\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	int port = atoi(argv[2]);
	const char *env = getenv("EDR_BRAKE_THRESHOLD");
	float threshold = argc > 3 ? strtof(argv[3], NULL) : env ? strtof(env, NULL) : 18.0f;
	float gain = argc > 4 ? strtof(argv[4], NULL) : 0.01f;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: recv returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in addr;
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		perror("brake_node: udp");
		return 1;
	}
	struct timeval tv = {0, 100000}; /* wake up to look at stop */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

	edr_shm_producer p;
	edr_shm_options o = EDR_SHM_OPTIONS_INIT;
	o.name = "planner/brake";
	o.type = "edr.example.Brake";
	o.layout = "f32le speed (m/s); f32le obstacle (m); f32le command; u8 brake"; /* brake-node/brake.layout */
	o.max_payload = 64;
	int err = edr_shm_create(&p, dir, &o);
	if (err != 0) {
		fprintf(stderr, "brake_node: shm segment in %s: %s\n", dir, strerror(-err));
		return 1;
	}
	fprintf(stderr, "brake_node: speed from udp 127.0.0.1:%d, publishing planner/brake in %s (threshold %g m/s)\n", port, dir, threshold);

	unsigned long handled = 0;
	uint8_t in[64], out[13];
	while (!stop) {
		ssize_t n = recv(fd, in, sizeof in, 0);
		if (n < 0) continue; /* timeout or signal: look at stop */
		if (n < 4) continue;
		int64_t gen = edr_shm_now_ns();
		float v;
		memcpy(&v, in, 4);
		float vv = v * v, tt = threshold * threshold;
		float cmd = (vv - tt) * gain;
		if (cmd < 0) cmd = 0;
		if (cmd > 1) cmd = 1;
		put_f32(out, v);
		put_f32(out + 4, NAN);
		put_f32(out + 8, cmd);
		out[12] = cmd > 0;
		if ((err = edr_shm_publish(&p, gen, out, sizeof out)) != 0)
			fprintf(stderr, "brake_node: publish: %s\n", strerror(-err));
		handled++;
	}
	edr_shm_close(&p);
	close(fd);
	fprintf(stderr, "brake_node: handled %lu datagrams\n", handled);
	return 0;
}
