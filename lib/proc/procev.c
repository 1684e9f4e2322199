/* SPDX-License-Identifier: MIT */
/*
 * procev.c - how processes ended, from the kernel's process-events connector
 * (netlink NETLINK_CONNECTOR, group CN_IDX_PROC). A process's exit status
 * goes only to its parent (wait, or waitid on a pidfd, which the kernel
 * allows for children only); the connector tells any listener with
 * in the initial user and PID namespaces the status of every thread that
 * exits (kernels before 6.6 also want CAP_NET_ADMIN; this one is asked, by
 * the acknowledgement of the listen request).
 */
#include "common/compat.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>

#include "proc/proc.h"

int proc_events_open(int *fd_out)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	/* nlmsghdr, cn_msg (which ends in a flexible array), the operation */
	char req[NLMSG_HDRLEN + sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op)]
		__attribute__((aligned(8)));
	struct nlmsghdr hdr;
	struct cn_msg msg;
	enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
	int fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	/* Every thread's exit on the machine comes by: a roomy buffer, so that
	 * a busy machine between two reads does not overflow it (ENOBUFS). */
	{
		int sz = 8 << 20;

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	memset(req, 0, sizeof(req));
	memset(&hdr, 0, sizeof(hdr));
	memset(&msg, 0, sizeof(msg));
	hdr.nlmsg_len = sizeof(req);
	hdr.nlmsg_type = NLMSG_DONE;
	msg.id.idx = CN_IDX_PROC;
	msg.id.val = CN_VAL_PROC;
	msg.len = sizeof(op);
	memcpy(req, &hdr, sizeof(hdr));
	memcpy(req + NLMSG_HDRLEN, &msg, sizeof(msg));
	memcpy(req + NLMSG_HDRLEN + sizeof(msg), &op, sizeof(op));
	if (send(fd, req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
		int e = -errno;

		close(fd);
		return e;
	}
	/* The kernel answers the request with an acknowledgement (PROC_EVENT_NONE)
	 * carrying its error (EPERM without CAP_NET_ADMIN where the kernel wants
	 * it); outside the initial user or PID namespace it ignores the request
	 * and sends nothing: no answer in 500 ms counts as that. */
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char buf[8192] __attribute__((aligned(8)));
		int left = 500, ack = -1;

		while (ack < 0 && left > 0 && poll(&pfd, 1, 50) >= 0) {
			ssize_t n;

			left -= 50;
			while (ack < 0 && (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
				const char *p = buf;
				size_t len = (size_t)n;

				while (ack < 0 && len >= sizeof(struct nlmsghdr)) {
					struct nlmsghdr nl;
					struct cn_msg cn;
					struct proc_event ev;

					memcpy(&nl, p, sizeof(nl));
					if (nl.nlmsg_len < sizeof(nl) || nl.nlmsg_len > len)
						break;
					if (nl.nlmsg_len >= sizeof(nl) + sizeof(cn) + sizeof(ev)) {
						memcpy(&cn, p + sizeof(nl), sizeof(cn));
						memcpy(&ev, p + sizeof(nl) + sizeof(cn), sizeof(ev));
						if (cn.id.idx == CN_IDX_PROC && ev.what == PROC_EVENT_NONE)
							ack = (int)ev.event_data.ack.err;
					}
					if (NLMSG_ALIGN(nl.nlmsg_len) >= len)
						break;
					len -= NLMSG_ALIGN(nl.nlmsg_len);
					p += NLMSG_ALIGN(nl.nlmsg_len);
				}
			}
		}
		if (ack != 0) {
			close(fd);
			return ack > 0 ? -ack : -ETIMEDOUT;
		}
	}
	*fd_out = fd;
	return 0;
}

void proc_events_parse(const void *buf, size_t len, proc_exit_fn fn, void *ctx)
{
	const char *p = buf;

	while (len >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr nl;
		struct cn_msg cn;
		struct proc_event ev;

		memcpy(&nl, p, sizeof(nl));
		if (nl.nlmsg_len < sizeof(nl) || nl.nlmsg_len > len)
			return;
		if (nl.nlmsg_len >= sizeof(nl) + sizeof(cn)) {
			memcpy(&cn, p + sizeof(nl), sizeof(cn));
			if (cn.id.idx == CN_IDX_PROC && cn.id.val == CN_VAL_PROC &&
			    cn.len >= sizeof(ev) && nl.nlmsg_len >= sizeof(nl) + sizeof(cn) + sizeof(ev)) {
				memcpy(&ev, p + sizeof(nl) + sizeof(cn), sizeof(ev));
				if (ev.what == PROC_EVENT_EXIT)
					fn(ctx, ev.event_data.exit.process_pid, ev.event_data.exit.process_tgid,
					   (int)ev.event_data.exit.exit_code);
			}
		}
		len -= NLMSG_ALIGN(nl.nlmsg_len) < len ? NLMSG_ALIGN(nl.nlmsg_len) : len;
		p += NLMSG_ALIGN(nl.nlmsg_len);
	}
}

int proc_events_read(int fd, proc_exit_fn fn, void *ctx)
{
	char buf[8192] __attribute__((aligned(8)));
	ssize_t n;
	int got = 0;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return got;
			return -errno; /* ENOBUFS: events were lost */
		}
		if (n == 0)
			return got;
		proc_events_parse(buf, (size_t)n, fn, ctx);
		got++;
	}
}
