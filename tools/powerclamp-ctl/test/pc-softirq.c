// SPDX-License-Identifier: GPL-2.0
/*
 * pc-softirq: keep the CPU it runs on busy with network softirqs.
 *
 *   pc-softirq [SECONDS]
 *
 * Brings the loopback interface up, then sends UDP datagrams to a socket
 * of its own on 127.0.0.1 and reads them back, as fast as it can, for
 * SECONDS (default: until killed). Each datagram the loopback device
 * takes is queued to the CPU's backlog and raises NET_RX_SOFTIRQ there,
 * so that softirqs are often pending on that CPU and, when their work
 * runs past its budget, left to ksoftirqd: the situation the injection
 * threads defer a forced idle period for. Pin it with taskset. Prints
 * the datagrams sent when it ends; exits 1 on a setup error.
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DATAGRAM_BYTES 1024
#define BURST 32	/* datagrams sent before the socket is drained */

static int loopback_up(int fd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	if (ifr.ifr_flags & IFF_UP)
		return 0;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(fd, SIOCSIFFLAGS, &ifr);
}

/*
 * A UDP socket bound to 127.0.0.1 on a port of the kernel's choice. The
 * address comes with lo's NETDEV_UP notifier, just after the interface
 * reads up: an instance that finds lo brought up by another one started
 * at the same moment may have to wait for it (tries every 10 ms, 2 s).
 */
static int bound_socket(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd, tries;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (tries = 0; bind(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0;
	     tries++) {
		if (errno != EADDRNOTAVAIL || tries == 200) {
			close(fd);
			return -1;
		}
		usleep(10000);
	}
	if (getsockname(fd, (struct sockaddr *)addr, &len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[DATAGRAM_BYTES];
	double seconds = argc > 1 ? atof(argv[1]) : 0, end;
	unsigned long long sent = 0;
	struct sockaddr_in addr;
	int fd, i;

	if (argc > 2 || (argc > 1 && seconds <= 0)) {
		fprintf(stderr, "usage: pc-softirq [SECONDS]\n");
		return 1;
	}
	/* 127.0.0.1 cannot be bound to before the interface is up */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || loopback_up(fd) < 0) {
		perror("pc-softirq: bringing lo up");
		return 1;
	}
	close(fd);
	fd = bound_socket(&addr);
	if (fd < 0) {
		perror("pc-softirq: loopback socket");
		return 1;
	}
	end = seconds > 0 ? now_s() + seconds : 0;
	while (!end || now_s() < end) {
		for (i = 0; i < BURST; i++)
			if (sendto(fd, buf, sizeof(buf), 0,
				   (struct sockaddr *)&addr, sizeof(addr)) > 0)
				sent++;
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			;
	}
	printf("%llu\n", sent);
	return 0;
}
