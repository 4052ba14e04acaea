/* loadgen: a small HTTP/1.1 load generator for bench_server (one thread, epoll, keep-alive POSTs).
 *
 * Usage: loadgen HOST_IPV4 PORT BODIES_FILE CONNECTIONS SECONDS [RATE [THINK_MS]]
 *
 *   BODIES_FILE  one request a line: PATH <TAB> JSON body (json.dumps output has no raw tab or newline).
 *                Requests take the lines in turn (a shared counter), so each call is distinct.
 *   RATE         0 (default): closed loop, each connection sends its next request when the last one is
 *                answered (after an exponential pause of mean THINK_MS, 0 = none; with pauses, the first
 *                request of each connection also waits one, so that the phase does not open with a burst).
 *                > 0: open loop, RATE requests/s on a fixed schedule, whatever the server does; a request
 *                whose time has come waits for a free connection, and its latency counts from its
 *                scheduled time (no coordinated omission).
 *
 * Prints one JSON object on stdout: requests, errors (io_errors + status_errors), seconds, p50/p90/p99/max
 * and mean latency in seconds, and the CPU seconds the generator itself used.
 * Errors: a refused or broken connection, a malformed response, a non-2xx status, or a request still
 * unanswered 60 s after it was sent. Build: cc -O2 -o loadgen loadgen.c -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536
#define TIMEOUT_S 60.0

typedef struct { char *data; size_t len; } Req;
typedef struct {
    int fd, busy;
    double sent_at, ready_at;   /* when the request in flight was due; when the next may go (think time) */
    size_t out_off, out_len, in_len;
    const Req *req;
    char in[BUF];
} Conn;

static Req *reqs; static size_t nreqs, next_req;
static double *lat; static size_t nlat, caplat;
static long io_errors, status_errors;
static struct sockaddr_in addr;
static int ep;

static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *msg) { fprintf(stderr, "loadgen: %s: %s\n", msg, strerror(errno)); exit(2); }

static void load_bodies(const char *path, const char *host, int port) {
    FILE *f = fopen(path, "r"); if (!f) die("cannot open the bodies file");
    char *line = NULL; size_t cap = 0; ssize_t n; size_t have = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        char *tab = strchr(line, '\t'); if (!tab) continue;
        *tab = 0; const char *body = tab + 1; size_t blen = strlen(body);
        if (nreqs == have) { have = have ? 2 * have : 1024; reqs = realloc(reqs, have * sizeof *reqs); }
        size_t room = blen + strlen(line) + 256; char *r = malloc(room);
        int len = snprintf(r, room, "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\n\r\n%s", line, host, port, blen, body);
        reqs[nreqs].data = r; reqs[nreqs++].len = (size_t)len;
    }
    free(line); fclose(f);
    if (!nreqs) { fprintf(stderr, "loadgen: no 'PATH<TAB>BODY' line in %s\n", path); exit(2); }
}

static void conn_open(Conn *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0); if (c->fd < 0) die("socket");
    int one = 1; setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) die("connect");
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
    c->busy = 0; c->in_len = 0;
}

static void conn_reset(Conn *c) { close(c->fd); conn_open(c); }

static void record(double seconds) {
    if (nlat == caplat) { caplat = caplat ? 2 * caplat : 65536; lat = realloc(lat, caplat * sizeof *lat); }
    lat[nlat++] = seconds;
}

static void want(Conn *c, unsigned events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void send_next(Conn *c, double due) {
    c->req = &reqs[next_req++ % nreqs]; c->out_off = 0; c->out_len = c->req->len;
    c->busy = 1; c->sent_at = due; c->in_len = 0;
    ssize_t w = send(c->fd, c->req->data, c->out_len, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != ENOTCONN) { io_errors++; conn_reset(c); return; }
    if (w > 0) c->out_off = (size_t)w;
    want(c, c->out_off < c->out_len ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

/* 1: a whole response is in c->in (status in *status); 0: need more; -1: malformed. */
static int parse(Conn *c, int *status) {
    c->in[c->in_len < BUF ? c->in_len : BUF - 1] = 0;
    char *end = strstr(c->in, "\r\n\r\n"); if (!end) return c->in_len >= BUF - 1 ? -1 : 0;
    if (sscanf(c->in, "HTTP/1.%*d %d", status) != 1) return -1;
    size_t head = (size_t)(end - c->in) + 4; char *cl = strcasestr(c->in, "\r\ncontent-length:");
    if (cl && cl < end) {
        size_t body = strtoul(cl + 17, NULL, 10);
        if (head + body >= BUF) return -1;
        return c->in_len >= head + body ? 1 : 0;
    }
    return strstr(end, "\r\n0\r\n\r\n") ? 1 : 0;   /* chunked: the last chunk has arrived */
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}

/* The q-quantile of the sorted latencies (nearest rank). */
static double pct(double q) {
    if (!nlat) return 0;
    size_t i = (size_t)ceil(q * (double)nlat); return lat[i ? i - 1 : 0];
}

static double exp_pause(double mean_s) { return mean_s > 0 ? -mean_s * log(1.0 - drand48()) : 0; }

static void on_event(Conn *c, unsigned events, double think_s) {
    if (!c->busy) { conn_reset(c); return; }   /* an idle connection closed by the server: not an error */
    if ((events & EPOLLOUT) && c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->req->data + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN) { io_errors++; conn_reset(c); return; }
        if (w > 0) c->out_off += (size_t)w;
        if (c->out_off == c->out_len) want(c, EPOLLIN);
    }
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return;
    ssize_t r = recv(c->fd, c->in + c->in_len, BUF - 1 - c->in_len, 0);
    if (r <= 0) { if (r < 0 && errno == EAGAIN) return; io_errors++; conn_reset(c); return; }
    c->in_len += (size_t)r;
    int status = 0, done = parse(c, &status);
    if (done == 0) return;
    double t = now();
    if (done < 0) { io_errors++; conn_reset(c); return; }
    record(t - c->sent_at);
    if (status < 200 || status > 299) status_errors++;
    c->busy = 0; c->ready_at = t + exp_pause(think_s);
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: loadgen HOST_IPV4 PORT BODIES_FILE CONNECTIONS SECONDS [RATE [THINK_MS]]\n"); return 2; }
    int port = atoi(argv[2]), nconn = atoi(argv[4]);
    double seconds = atof(argv[5]), rate = argc > 6 ? atof(argv[6]) : 0, think_s = argc > 7 ? atof(argv[7]) / 1000 : 0;
    if (nconn < 1 || seconds <= 0 || rate < 0) { fprintf(stderr, "loadgen: need CONNECTIONS >= 1, SECONDS > 0, RATE >= 0\n"); return 2; }
    addr.sin_family = AF_INET; addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) { fprintf(stderr, "loadgen: bad IPv4 address %s\n", argv[1]); return 2; }
    load_bodies(argv[3], argv[1], port); srand48(1);
    ep = epoll_create1(0); if (ep < 0) die("epoll_create1");
    Conn *conns = calloc((size_t)nconn, sizeof *conns);
    for (int i = 0; i < nconn; i++) conn_open(&conns[i]);
    struct epoll_event evs[256];
    double start = now(), stop = start + seconds, next_due = start;
    /* With think time, each connection starts after a pause of its own: all of them at once would be one burst
       of nconn requests that no steady stream of rollout workers sends. */
    for (int i = 0; i < nconn; i++) conns[i].ready_at = start + exp_pause(think_s);
    long sent = 0; int rotor = 0;
    for (double t = start; ; t = now()) {
        int active = 0;
        int first = rotor;
        for (int j = 0; j < nconn; j++) {   /* from a rotating start: the free connections take turns */
            int i = (j + first) % nconn;
            Conn *c = &conns[i];
            if (c->busy && t - c->sent_at > TIMEOUT_S) { io_errors++; conn_reset(c); }
            if (c->busy) { active = 1; continue; }
            if (t >= stop) continue;
            if (rate > 0 && next_due <= t) { send_next(c, next_due); sent++; next_due = start + sent / rate; active = 1; }
            else if (rate == 0 && c->ready_at <= t) { send_next(c, t); sent++; active = 1; }
            else continue;
            rotor = (i + 1) % nconn;
        }
        if (t >= stop && !active) break;
        int n = epoll_wait(ep, evs, 256, 1);
        for (int i = 0; i < n; i++) on_event(evs[i].data.ptr, evs[i].events, think_s);
    }
    double elapsed = now() - start;
    qsort(lat, nlat, sizeof *lat, cmp_double);
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, sum = 0;
    for (size_t i = 0; i < nlat; i++) sum += lat[i];
    printf("{\"requests\": %zu, \"errors\": %ld, \"io_errors\": %ld, \"status_errors\": %ld, \"seconds\": %.6f, "
           "\"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"max\": %.6f, \"mean\": %.6f, \"loadgen_cpu_s\": %.3f}\n",
           nlat, io_errors + status_errors, io_errors, status_errors, elapsed, pct(0.50), pct(0.90), pct(0.99),
           nlat ? lat[nlat - 1] : 0.0, nlat ? sum / nlat : 0.0, cpu);
    return 0;
}
