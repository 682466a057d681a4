"""The C text of sim.core: the event heap, the wires, the egress FIFOs and the switch hop.

It mirrors sim.events, sim.link, p4switch.queues (one FIFO and the trimmed one, as a
simulated switch has them) and sim.switch line for line — the same float arithmetic in the
same order, the same event keys (``hash`` of the key tuple, computed here exactly as CPython
3.11 hashes a tuple of a float and two ints), the same ticket taken at the same moment — so a
run gives the same results byte for byte (tests/sim/test_core.py runs both). The switch calls
the native pipeline's entry points (p4switch.native) through function pointers handed over by
sim.core, so no Python runs between two hops; an event for Python (a host's timer, a frame
reaching a host) makes ``core_step`` return to sim.core, which runs it and calls again.
"""

CDEF = r"""
struct core {
    double now; double horizon; int64_t events_run; int32_t stopped; int32_t reached_until;
    int64_t cur_id; int64_t cur_child;
    int64_t r_handle; int32_t r_link; uint32_t r_len; char *r_frame;
    int32_t nout; int32_t nlog; char err[512];
    int32_t note_kind; int32_t note_host; int64_t note_flow; int32_t note_rank;
    ...;
};
struct core_out { int32_t link; uint32_t len; double t; double kt; int64_t kid; int64_t kc;
                  char *data; };
struct core_log { int32_t sw; int32_t port; double t; uint32_t len; char *data; };
struct core *core_new(int32_t nlinks, int32_t nswitches);
void core_free(struct core *K);
int64_t core_hash_key(double t, int64_t id, int64_t c);
size_t core_len(struct core *K);
double core_next_time(struct core *K);
void core_link_init(struct core *K, int32_t i, double us_per_byte, double prop, int32_t dst_sw,
                    int32_t dst_port);
void core_link_set(struct core *K, int32_t i, int32_t up, int32_t outbox);
void core_link_stats(struct core *K, int32_t i, int64_t *out);
int32_t core_switch_init(struct core *K, int32_t s, uintptr_t P, uintptr_t process,
                         uintptr_t ingress, uintptr_t egress, uint32_t ctx_size,
                         uint32_t out_slack, double uptime, int32_t fast_path,
                         int32_t trim_bytes, int32_t record);
int32_t core_port_add(struct core *K, int32_t s, int32_t port, int32_t link, int32_t paced,
                      double us_per_byte, int32_t depth);
void core_switch_stats(struct core *K, int32_t s, int64_t *out);
void core_queue_stats(struct core *K, int32_t s, int32_t port, int64_t *out, double *free_us);
int32_t core_set_routes(struct core *K, int32_t s, int32_t n, const uint32_t *masks,
                        const uint32_t *prefixes, const int32_t *offsets, const int32_t *ports);
int32_t core_take_dirty(struct core *K, int32_t *sw, int32_t cap_sw, int32_t *links,
                        int32_t cap_links, int32_t *nlinks);
void core_schedule(struct core *K, double t, int64_t handle);
void core_ticket(struct core *K, double *kt, int64_t *kid, int64_t *kc);
void core_push(struct core *K, double t, double kt, int64_t kid, int64_t kc, int64_t handle);
int32_t core_link_send(struct core *K, int32_t i, double start, const uint8_t *data,
                       uint32_t len);
int32_t core_link_accept(struct core *K, int32_t i, double t, double kt, int64_t kid,
                         int64_t kc, const uint8_t *data, uint32_t len);
void core_begin(struct core *K);
int64_t core_step(struct core *K, double until, double before, int64_t limit);
int32_t core_box_count(struct core *K, int32_t box, int64_t *held);
double core_box_take(struct core *K, int32_t box, char *hdr, char *data);
int32_t core_accept_blob(struct core *K, int32_t n, const char *hdr, const char *data);
struct core_log *core_log(struct core *K);
void core_log_clear(struct core *K);
"""

SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>

/* ---- CPython 3.11's hash of (float, int, int), bit for bit ---------------------------- */
#define PYH_BITS 61
#define PYH_MOD ((((uint64_t)1) << PYH_BITS) - 1)
#define XXP1 11400714785074694791ULL
#define XXP2 14029467366897019727ULL
#define XXP5 2870177450012600261ULL

static int64_t hash_double(double v) {
    if (!isfinite(v)) {
        if (isinf(v)) return v > 0 ? 314159 : -314159;
        return 0;
    }
    int e;
    double m = frexp(v, &e);
    int sign = 1;
    if (m < 0) { sign = -1; m = -m; }
    uint64_t x = 0, y;
    while (m) {
        x = ((x << 28) & PYH_MOD) | x >> (PYH_BITS - 28);
        m *= 268435456.0;
        e -= 28;
        y = (uint64_t)m;
        m -= y;
        x += y;
        if (x >= PYH_MOD) x -= PYH_MOD;
    }
    e = e >= 0 ? e % PYH_BITS : PYH_BITS - 1 - ((-1 - e) % PYH_BITS);
    x = ((x << e) & PYH_MOD) | x >> (PYH_BITS - e);
    x = x * (uint64_t)(int64_t)sign;
    if (x == (uint64_t)-1) x = (uint64_t)-2;
    return (int64_t)x;
}

static int64_t hash_int(int64_t v) {
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t x = a % PYH_MOD;
    int64_t h = v < 0 ? -(int64_t)x : (int64_t)x;
    return h == -1 ? -2 : h;
}

static inline uint64_t xxlane(uint64_t acc, uint64_t lane) {
    acc += lane * XXP2;
    acc = (acc << 31) | (acc >> 33);
    return acc * XXP1;
}

int64_t core_hash_key(double t, int64_t id, int64_t c) {
    uint64_t acc = XXP5;
    acc = xxlane(acc, (uint64_t)hash_double(t));
    acc = xxlane(acc, (uint64_t)hash_int(id));
    acc = xxlane(acc, (uint64_t)hash_int(c));
    acc += 3 ^ (XXP5 ^ 3527539ULL);
    if (acc == (uint64_t)-1) return 1546275796;
    return (int64_t)acc;
}

/* ---- types ---------------------------------------------------------------------------- */
enum { EV_PY = 0, EV_WIRE = 1, EV_SERVE = 2, EV_HOST = 3 };
#define CORE_NOTE ((int64_t)1 << 61)   /* core_step: a host's note for Python (K->note_*) */
#define MAX_PORTS 1024   /* sim.core refuses a switch with a connected port beyond */

typedef struct { double t; double kt; int64_t kid; int64_t kc; int64_t arg; int32_t kind;
                 int32_t obj; } ev_t;

typedef struct { double t; double kt; int64_t kid; int64_t kc; uint8_t *data; uint32_t len; }
    wf_t;   /* a frame on a wire */

typedef struct { uint8_t *data; void *ctx; uint32_t len; uint32_t plen; double enq;
                 int64_t enq_qdepth; } job_t;

typedef struct { job_t *v; uint32_t cap, head, n; } fifo_t;

typedef int64_t (*process_fn)(void *P, void *C, const uint8_t *pkt, uint32_t len,
                              uint32_t port, uint64_t now, uint8_t *out);
typedef int64_t (*ingress_fn)(void *P, void *C, const uint8_t *pkt, uint32_t len,
                              uint32_t port, uint64_t now);
typedef int64_t (*egress_fn)(void *P, void *C, const uint8_t *pkt, uint32_t len, uint32_t eport,
                             uint32_t eplen, uint64_t now, uint64_t enq_ts, uint64_t enq_qdepth,
                             uint64_t deq_timedelta, uint64_t deq_qdepth, uint64_t qid,
                             uint8_t *out);

typedef struct {
    int32_t link;          /* the outgoing link */
    int32_t port;
    int32_t paced; double us_per_byte; int32_t depth;
    fifo_t fifo, trim;
    double next_free;      /* EgressQueue._next_free_us */
    int32_t last_trimmed;
    int64_t enqueued, dequeued, tail_drops, max_depth_seen, trimmed, promoted;
    double free_at;        /* SimSwitch._free_at */
    int32_t pending;
} port_t;

typedef struct { uint32_t mask, prefix; int32_t off, n; } route_t;

typedef struct {
    void *P; process_fn process; ingress_fn ingress; egress_fn egress;
    uint32_t ctx_size, out_slack;
    double uptime; int32_t fast_path, trim_bytes, record, dirty;
    int16_t slot[MAX_PORTS];   /* port -> index into ports, -1: unconnected */
    port_t *ports; int32_t nports;
    int64_t backlog; double busy_until;
    int64_t packets_in, fast_packets, pipeline_drops, unconnected;
    /* the port oracle (sim.network.RoutePorts): routes, longest prefix first */
    int32_t has_routes; route_t *routes; int32_t nroutes; int32_t *rports;
    uint32_t *ckey; int32_t *cval; uint32_t ccap, cn;    /* dst -> route (+1), 0: empty */
} sw_t;

typedef struct {
    double us_per_byte, prop; int32_t up, outbox, dst_sw, dst_port, dst_host, dirty;
    int64_t tx_packets, tx_bytes, lost;
    wf_t *w; uint32_t cap, head, n;
} link_t;

struct core_out { int32_t link; uint32_t len; double t; double kt; int64_t kid; int64_t kc;
                  char *data; };
struct core_log { int32_t sw; int32_t port; double t; uint32_t len; char *data; };

struct core {
    double now; double horizon; int64_t events_run; int32_t stopped; int32_t reached_until;
    int64_t cur_id; int64_t cur_child;
    int64_t r_handle; int32_t r_link; uint32_t r_len; char *r_frame;
    int32_t nout; int32_t nlog; char err[512];
    int32_t note_kind; int32_t note_host; int64_t note_flow; int32_t note_rank;
    struct hosts *hosts;               /* the hosts in C (sim/hostc_c.py), or NULL */
    int64_t n;                         /* events this run() */
    ev_t *heap; size_t nheap, capheap;
    link_t *links; int32_t nlinks;
    sw_t *sws; int32_t nsws;
    struct core_out *out; int32_t capout;
    struct core_log *log; int32_t caplog;
    void **pool; int32_t npool, cappool; uint32_t pool_size;
    uint8_t *scratch; uint32_t capscratch;
    uint8_t *vin; uint32_t capvin; uint8_t *vout; uint32_t capvout;
    int32_t r_owned;                   /* r_frame is a frame buffer (else: vin) */
    int32_t *dsw; int32_t ndsw; int32_t *dlk; int32_t ndlk;
    int32_t error;
};

/* the hosts' path (sim/hostc_c.py, compiled after this text) */
struct hosts;
static int host_frame(struct core *K, int32_t hi, const uint8_t *data, uint32_t have,
                      uint32_t n, double now);
static int host_tx(struct core *K, int32_t hi, double now);
static void hosts_free(struct core *K);

/* ---- the heap: (t, kt, kid, kc) ascending, as heapq orders (t, (now, id, c), ...) -------- */
static inline int ev_lt(const ev_t *a, const ev_t *b) {
    if (a->t != b->t) return a->t < b->t;
    if (a->kt != b->kt) return a->kt < b->kt;
    if (a->kid != b->kid) return a->kid < b->kid;
    return a->kc < b->kc;
}

static void heap_push(struct core *K, ev_t e) {
    if (K->nheap == K->capheap) {
        K->capheap = K->capheap ? 2 * K->capheap : 1024;
        K->heap = realloc(K->heap, K->capheap * sizeof(ev_t));
    }
    size_t i = K->nheap++;
    ev_t *h = K->heap;
    while (i > 0) {
        size_t p = (i - 1) >> 1;
        if (!ev_lt(&e, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static ev_t heap_pop(struct core *K) {
    ev_t *h = K->heap;
    ev_t top = h[0];
    ev_t last = h[--K->nheap];
    size_t n = K->nheap, i = 0;
    if (n) {
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= n) break;
            if (c + 1 < n && ev_lt(&h[c + 1], &h[c])) c++;
            if (!ev_lt(&h[c], &last)) break;
            h[i] = h[c];
            i = c;
        }
        h[i] = last;
    }
    return top;
}

static inline void schedule(struct core *K, double t, int32_t kind, int32_t obj, int64_t arg) {
    if (t < K->now) t = K->now;
    ev_t e = {t, K->now, K->cur_id, ++K->cur_child, arg, kind, obj};
    heap_push(K, e);
}

/* ---- memory --------------------------------------------------------------------------- */
/* frame buffers by power-of-two size class, kept for reuse (a run allocates and frees one or
 * two per hop); the class and the bytes held (below) are stored in the 16 bytes before it */
#define FB_CLASSES 32
#define FB_KEEP 8192
static void *fb_list[FB_CLASSES][FB_KEEP];
static int32_t fb_n[FB_CLASSES];

static uint8_t *fb_alloc(uint32_t n) {
    uint32_t c = 6;
    while (((uint64_t)1 << c) < n) c++;
    uint8_t *p;
    if (fb_n[c]) p = fb_list[c][--fb_n[c]];
    else {
        p = malloc(16 + ((size_t)1 << c));
        *(uint32_t *)p = c;
    }
    return p + 16;
}

static void fb_free(void *q) {
    if (!q) return;
    uint8_t *p = (uint8_t *)q - 16;
    uint32_t c = *(uint32_t *)p;
    if (fb_n[c] < FB_KEEP) fb_list[c][fb_n[c]++] = p;
    else free(p);
}

static void *ctx_get(struct core *K) {
    if (K->npool) return K->pool[--K->npool];
    return malloc(K->pool_size);
}

static void ctx_put(struct core *K, void *c) {
    if (K->npool == K->cappool) {
        K->cappool = K->cappool ? 2 * K->cappool : 256;
        K->pool = realloc(K->pool, K->cappool * sizeof(void *));
    }
    K->pool[K->npool++] = c;
}

/* A frame in flight is held as its bytes up to its last non-zero one and its length: the
 * rest is zeros (a data frame's payload, 4,000 bytes of a 4,070-byte frame), written out only
 * where something reads the whole frame: the pipeline (into a buffer of the core's), a host,
 * another part, the ingress log. Same bytes, a fraction of the memory. */
static inline uint32_t fb_have(const uint8_t *q) { return *(const uint32_t *)(q - 12); }

static inline void fb_set_have(uint8_t *q, uint32_t n) { *(uint32_t *)(q - 12) = n; }

static uint32_t nonzero_len(const uint8_t *d, uint32_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, d + n - 8, 8);
        if (w) break;
        n -= 8;
    }
    while (n && !d[n - 1]) n--;
    return n;
}

/* a frame's held copy (its zero tail left out) */
static uint8_t *frame_pack(const uint8_t *d, uint32_t n) {
    uint32_t h = nonzero_len(d, n);
    uint8_t *p = fb_alloc(h);
    memcpy(p, d, h);
    fb_set_have(p, h);
    return p;
}

/* the whole of a held frame into ``dst`` (``len`` bytes) */
static void frame_expand(uint8_t *dst, const uint8_t *f, uint32_t len) {
    uint32_t h = fb_have(f);
    if (h > len) h = len;
    memcpy(dst, f, h);
    memset(dst + h, 0, len - h);
}

/* a held frame made whole in a buffer of its own */
static uint8_t *frame_full(const uint8_t *f, uint32_t len) {
    uint8_t *p = fb_alloc(len);
    frame_expand(p, f, len);
    fb_set_have(p, len);
    return p;
}

static uint8_t *grow(uint8_t **buf, uint32_t *cap, uint32_t n) {
    if (n > *cap) {
        free(*buf);
        *cap = n < 4096 ? 4096 : n;
        *buf = malloc(*cap);
    }
    return *buf;
}

/* a held frame whole, for the pipeline to read: itself, or made whole in the core's buffer */
static const uint8_t *frame_view(struct core *K, const uint8_t *f, uint32_t len) {
    if (fb_have(f) >= len) return f;
    uint8_t *v = grow(&K->vin, &K->capvin, len);
    frame_expand(v, f, len);
    return v;
}

static void fifo_push(fifo_t *f, job_t j) {
    if (f->n == f->cap) {
        uint32_t nc = f->cap ? 2 * f->cap : 16;
        job_t *v = malloc(nc * sizeof(job_t));
        for (uint32_t i = 0; i < f->n; i++) v[i] = f->v[(f->head + i) % f->cap];
        free(f->v);
        f->v = v; f->cap = nc; f->head = 0;
    }
    f->v[(f->head + f->n) % f->cap] = j;
    f->n++;
}

static inline job_t *fifo_front(fifo_t *f) { return &f->v[f->head]; }

static inline void fifo_pop(fifo_t *f) {
    f->head = (f->head + 1) % f->cap;
    f->n--;
}

static void dirty_sw(struct core *K, int32_t s) {
    sw_t *S = &K->sws[s];
    if (!S->dirty) { S->dirty = 1; K->dsw[K->ndsw++] = s; }
}

static void dirty_link(struct core *K, int32_t i) {
    link_t *L = &K->links[i];
    if (!L->dirty) { L->dirty = 1; K->dlk[K->ndlk++] = i; }
}

/* ---- setup ---------------------------------------------------------------------------- */
struct core *core_new(int32_t nlinks, int32_t nswitches) {
    struct core *K = calloc(1, sizeof(struct core));
    K->horizon = INFINITY;
    K->links = calloc(nlinks ? nlinks : 1, sizeof(link_t));
    K->nlinks = nlinks;
    K->sws = calloc(nswitches ? nswitches : 1, sizeof(sw_t));
    K->nsws = nswitches;
    K->dsw = calloc(nswitches + 1, sizeof(int32_t));
    K->dlk = calloc(nlinks + 1, sizeof(int32_t));
    for (int32_t i = 0; i < nlinks; i++) K->links[i].dst_sw = K->links[i].dst_host = -1;
    return K;
}

void core_free(struct core *K) {
    if (!K) return;
    hosts_free(K);
    for (int32_t i = 0; i < K->nlinks; i++) {
        link_t *L = &K->links[i];
        for (uint32_t j = 0; j < L->n; j++) fb_free(L->w[(L->head + j) % L->cap].data);
        free(L->w);
    }
    for (int32_t s = 0; s < K->nsws; s++) {
        sw_t *S = &K->sws[s];
        for (int32_t p = 0; p < S->nports; p++) {
            fifo_t *fs[2] = {&S->ports[p].fifo, &S->ports[p].trim};
            for (int k = 0; k < 2; k++) {
                fifo_t *f = fs[k];
                for (uint32_t j = 0; j < f->n; j++) {
                    job_t *jb = &f->v[(f->head + j) % f->cap];
                    fb_free(jb->data);
                    free(jb->ctx);
                }
                free(f->v);
            }
        }
        free(S->ports); free(S->routes); free(S->rports); free(S->ckey); free(S->cval);
    }
    for (int32_t i = 0; i < K->nout; i++) fb_free(K->out[i].data);
    for (int32_t i = 0; i < K->nlog; i++) fb_free(K->log[i].data);
    for (int32_t i = 0; i < K->npool; i++) free(K->pool[i]);
    if (K->r_owned) fb_free(K->r_frame);
    free(K->out); free(K->log); free(K->pool); free(K->scratch); free(K->heap);
    free(K->vin); free(K->vout);
    free(K->links); free(K->sws); free(K->dsw); free(K->dlk);
    free(K);
}

size_t core_len(struct core *K) { return K->nheap; }

double core_next_time(struct core *K) { return K->nheap ? K->heap[0].t : INFINITY; }

void core_link_init(struct core *K, int32_t i, double us_per_byte, double prop, int32_t dst_sw,
                    int32_t dst_port) {
    link_t *L = &K->links[i];
    L->us_per_byte = us_per_byte; L->prop = prop; L->up = 1;
    L->dst_sw = dst_sw; L->dst_port = dst_port;
}

void core_link_set(struct core *K, int32_t i, int32_t up, int32_t outbox) {
    K->links[i].up = up;
    K->links[i].outbox = outbox;
}

void core_link_stats(struct core *K, int32_t i, int64_t *out) {
    link_t *L = &K->links[i];
    out[0] = L->tx_packets; out[1] = L->tx_bytes; out[2] = L->lost;
}

int32_t core_switch_init(struct core *K, int32_t s, uintptr_t P, uintptr_t process,
                         uintptr_t ingress, uintptr_t egress, uint32_t ctx_size,
                         uint32_t out_slack, double uptime, int32_t fast_path,
                         int32_t trim_bytes, int32_t record) {
    sw_t *S = &K->sws[s];
    S->P = (void *)P;
    S->process = (process_fn)process;
    S->ingress = (ingress_fn)ingress;
    S->egress = (egress_fn)egress;
    S->ctx_size = ctx_size;
    S->out_slack = out_slack;
    S->uptime = uptime;
    S->fast_path = fast_path;
    S->trim_bytes = trim_bytes;
    S->record = record;
    if (ctx_size > K->pool_size) {
        if (K->npool) return -1;      /* one context size per core */
        K->pool_size = ctx_size;
    }
    for (int i = 0; i < MAX_PORTS; i++) S->slot[i] = -1;
    return 0;
}

int32_t core_port_add(struct core *K, int32_t s, int32_t port, int32_t link, int32_t paced,
                      double us_per_byte, int32_t depth) {
    sw_t *S = &K->sws[s];
    if (port < 0 || port >= MAX_PORTS) return -1;
    int32_t k = S->slot[port];
    if (k < 0) {
        S->ports = realloc(S->ports, (S->nports + 1) * sizeof(port_t));
        k = S->nports++;
        memset(&S->ports[k], 0, sizeof(port_t));
        S->slot[port] = (int16_t)k;
    }
    port_t *Q = &S->ports[k];
    Q->port = port;
    Q->link = link; Q->paced = paced; Q->us_per_byte = us_per_byte; Q->depth = depth;
    Q->free_at = 0.0;
    return k;
}

void core_switch_stats(struct core *K, int32_t s, int64_t *out) {
    sw_t *S = &K->sws[s];
    out[0] = S->packets_in; out[1] = S->fast_packets; out[2] = S->pipeline_drops;
    out[3] = S->unconnected;
}

void core_queue_stats(struct core *K, int32_t s, int32_t port, int64_t *out, double *free_us) {
    sw_t *S = &K->sws[s];
    port_t *Q = &S->ports[S->slot[port]];
    out[0] = Q->enqueued; out[1] = Q->dequeued; out[2] = Q->tail_drops;
    out[3] = Q->max_depth_seen; out[4] = Q->trimmed; out[5] = Q->promoted;
    *free_us = Q->next_free;
}

int32_t core_set_routes(struct core *K, int32_t s, int32_t n, const uint32_t *masks,
                        const uint32_t *prefixes, const int32_t *offsets, const int32_t *ports) {
    sw_t *S = &K->sws[s];
    free(S->routes); free(S->rports); free(S->ckey); free(S->cval);
    S->routes = NULL; S->rports = NULL; S->ckey = NULL; S->cval = NULL;
    S->ccap = S->cn = 0;
    if (n < 0) { S->has_routes = 0; return 0; }
    S->has_routes = 1;
    S->nroutes = n;
    S->routes = malloc((n ? n : 1) * sizeof(route_t));
    int32_t total = n ? offsets[n] : 0;
    S->rports = malloc((total ? total : 1) * sizeof(int32_t));
    memcpy(S->rports, ports, total * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) {
        S->routes[i].mask = masks[i];
        S->routes[i].prefix = prefixes[i];
        S->routes[i].off = offsets[i];
        S->routes[i].n = offsets[i + 1] - offsets[i];
    }
    S->ccap = 64;
    S->ckey = calloc(S->ccap, sizeof(uint32_t));
    S->cval = calloc(S->ccap, sizeof(int32_t));
    return 0;
}

int32_t core_take_dirty(struct core *K, int32_t *sw, int32_t cap_sw, int32_t *links,
                        int32_t cap_links, int32_t *nlinks) {
    int32_t ns = K->ndsw < cap_sw ? K->ndsw : cap_sw;
    for (int32_t i = 0; i < ns; i++) { sw[i] = K->dsw[i]; K->sws[sw[i]].dirty = 0; }
    int32_t nl = K->ndlk < cap_links ? K->ndlk : cap_links;
    for (int32_t i = 0; i < nl; i++) { links[i] = K->dlk[i]; K->links[links[i]].dirty = 0; }
    K->ndsw = 0; K->ndlk = 0;
    *nlinks = nl;
    return ns;
}

/* ---- the loop's face for Python ------------------------------------------------------- */
void core_schedule(struct core *K, double t, int64_t handle) {
    schedule(K, t, EV_PY, 0, handle);
}

void core_ticket(struct core *K, double *kt, int64_t *kid, int64_t *kc) {
    *kt = K->now; *kid = K->cur_id; *kc = ++K->cur_child;
}

void core_push(struct core *K, double t, double kt, int64_t kid, int64_t kc, int64_t handle) {
    ev_t e = {t, kt, kid, kc, handle, EV_PY, 0};
    heap_push(K, e);
}

void core_begin(struct core *K) {
    K->stopped = 0; K->reached_until = 0; K->n = 0;
}

/* ---- wires (sim.link) ----------------------------------------------------------------- */
static int wire_put(struct core *K, int32_t i, double t, double kt, int64_t kid, int64_t kc,
                    uint8_t *data, uint32_t len) {
    link_t *L = &K->links[i];
    if (L->n && t < L->w[(L->head + L->n - 1) % L->cap].t) {
        snprintf(K->err, sizeof K->err, "V:link %d: a frame would arrive at %.17g us, before "
                 "the one sent ahead of it (%.17g us)", i, t,
                 L->w[(L->head + L->n - 1) % L->cap].t);
        fb_free(data);
        K->error = 1;
        return -1;
    }
    if (L->n == L->cap) {
        uint32_t nc = L->cap ? 2 * L->cap : 8;
        wf_t *w = malloc(nc * sizeof(wf_t));
        for (uint32_t j = 0; j < L->n; j++) w[j] = L->w[(L->head + j) % L->cap];
        free(L->w);
        L->w = w; L->cap = nc; L->head = 0;
    }
    wf_t f = {t, kt, kid, kc, data, len};
    L->w[(L->head + L->n) % L->cap] = f;
    L->n++;
    if (L->n == 1) {
        ev_t e = {t, kt, kid, kc, 0, EV_WIRE, i};
        heap_push(K, e);
    }
    return 0;
}

/* Link.send: takes ownership of ``data`` */
static int link_send(struct core *K, int32_t i, double start, uint8_t *data, uint32_t len) {
    link_t *L = &K->links[i];
    dirty_link(K, i);
    if (!L->up) {
        L->lost++;
        fb_free(data);
        return 0;
    }
    L->tx_packets++;
    L->tx_bytes += len;
    double t = start + len * L->us_per_byte + L->prop;
    double kt = K->now; int64_t kid = K->cur_id, kc = ++K->cur_child;
    if (L->outbox) {
        if (K->nout == K->capout) {
            K->capout = K->capout ? 2 * K->capout : 256;
            K->out = realloc(K->out, K->capout * sizeof(struct core_out));
        }
        struct core_out o = {i, len, t, kt, kid, kc, (char *)data};
        K->out[K->nout++] = o;
        return 0;
    }
    return wire_put(K, i, t, kt, kid, kc, data, len);
}

int32_t core_link_send(struct core *K, int32_t i, double start, const uint8_t *data,
                       uint32_t len) {
    K->error = 0;
    return link_send(K, i, start, frame_pack(data, len), len);
}

int32_t core_link_accept(struct core *K, int32_t i, double t, double kt, int64_t kid,
                         int64_t kc, const uint8_t *data, uint32_t len) {
    K->error = 0;
    return wire_put(K, i, t, kt, kid, kc, frame_pack(data, len), len);
}

/* Part ``box``'s frames (its links' ``outbox`` id), in sending order, for sim.frameblob:
 * how many, and in ``held`` the bytes they hold (each without its zero tail) */
int32_t core_box_count(struct core *K, int32_t box, int64_t *held) {
    int32_t n = 0;
    *held = 0;
    for (int32_t i = 0; i < K->nout; i++) {
        struct core_out *o = &K->out[i];
        if (K->links[o->link].outbox != box) continue;
        n++;
        *held += fb_have((uint8_t *)o->data);
    }
    return n;
}

/* ... taken off the outbox into two blobs: per frame a 44-byte header (link int32, t, kt
 * double, kid, kc int64, len, held uint32) and its held bytes; returns the earliest t */
double core_box_take(struct core *K, int32_t box, char *hdr, char *data) {
    double first = INFINITY;
    int32_t keep = 0;
    for (int32_t i = 0; i < K->nout; i++) {
        struct core_out *o = &K->out[i];
        if (K->links[o->link].outbox != box) { K->out[keep++] = *o; continue; }
        uint32_t have = fb_have((uint8_t *)o->data);
        memcpy(hdr, &o->link, 4); memcpy(hdr + 4, &o->t, 8); memcpy(hdr + 12, &o->kt, 8);
        memcpy(hdr + 20, &o->kid, 8); memcpy(hdr + 28, &o->kc, 8); memcpy(hdr + 36, &o->len, 4);
        memcpy(hdr + 40, &have, 4);
        hdr += 44;
        memcpy(data, o->data, have);
        data += have;
        if (o->t < first) first = o->t;
        fb_free(o->data);
    }
    K->nout = keep;
    return first;
}

/* another part's blob (core_box_take's) onto the wires, in order: as core_link_accept on
 * each frame */
int32_t core_accept_blob(struct core *K, int32_t n, const char *hdr, const char *data) {
    K->error = 0;
    for (int32_t j = 0; j < n; j++, hdr += 44) {
        int32_t link; double t, kt; int64_t kid, kc; uint32_t len, have;
        memcpy(&link, hdr, 4); memcpy(&t, hdr + 4, 8); memcpy(&kt, hdr + 12, 8);
        memcpy(&kid, hdr + 20, 8); memcpy(&kc, hdr + 28, 8); memcpy(&len, hdr + 36, 4);
        memcpy(&have, hdr + 40, 4);
        uint8_t *p = fb_alloc(have);
        memcpy(p, data, have);
        fb_set_have(p, have);
        data += have;
        if (wire_put(K, link, t, kt, kid, kc, p, len) < 0) return -1;
    }
    return 0;
}

struct core_log *core_log(struct core *K) { return K->log; }
void core_log_clear(struct core *K) {
    for (int32_t i = 0; i < K->nlog; i++) fb_free(K->log[i].data);
    K->nlog = 0;
}

/* ---- trimming (p4switch.queues.trim_frame) ------------------------------------------- */
static uint32_t trim_frame(uint8_t *out, uint32_t len, uint32_t keep) {
    if (len <= keep) return len;
    if (keep >= 34 && out[12] == 0x08 && out[13] == 0x00 && (out[14] >> 4) == 4) {
        uint32_t ihl = (out[14] & 0x0F) * 4;
        out[16] = (uint8_t)((keep - 14) >> 8); out[17] = (uint8_t)(keep - 14);
        out[24] = 0; out[25] = 0;
        if (keep >= 14 + ihl) {
            uint64_t total = 0;
            for (uint32_t i = 14; i < 14 + ihl; i += 2) total += ((uint32_t)out[i] << 8) | out[i + 1];
            while (total >> 16) total = (total & 0xFFFF) + (total >> 16);
            uint32_t c = ~total & 0xFFFF;
            out[24] = (uint8_t)(c >> 8); out[25] = (uint8_t)c;
        }
        uint32_t udp = 14 + ihl;
        if (out[23] == 17 && keep >= udp + 8) {
            out[udp + 4] = (uint8_t)((keep - udp) >> 8); out[udp + 5] = (uint8_t)(keep - udp);
            out[udp + 6] = 0; out[udp + 7] = 0;
        }
    }
    return keep;
}

/* ---- the switch (sim.switch.SimSwitch with p4switch.queues.EgressQueue) --------------- */
static inline port_t *port_of(sw_t *S, int64_t port) {
    if (port < 0 || port >= MAX_PORTS) return NULL;
    int32_t k = S->slot[port];
    return k < 0 ? NULL : &S->ports[k];
}

/* where the pipeline writes a frame out (the core's buffer; frame_pack keeps what is held) */
static uint8_t *outbuf(struct core *K, uint32_t n, uint32_t slack) {
    return grow(&K->vout, &K->capvout, n + slack);
}

/* RoutePorts.ports + SimSwitch._idle_for */
static int idle_for(sw_t *S, const uint8_t *f, uint32_t len, double now) {
    if (!S->has_routes) return 0;
    if (len < 34 || f[12] != 0x08 || f[13] != 0x00) return 0;
    uint32_t dst = ((uint32_t)f[30] << 24) | ((uint32_t)f[31] << 16) | ((uint32_t)f[32] << 8)
        | f[33];
    uint32_t h = (dst * 2654435761U) & (S->ccap - 1);
    int32_t r = -1;
    while (S->cval[h]) {
        if (S->ckey[h] == dst) { r = S->cval[h] - 1; break; }
        h = (h + 1) & (S->ccap - 1);
    }
    if (r < 0) {
        r = S->nroutes;   /* no route: no port */
        for (int32_t i = 0; i < S->nroutes; i++)
            if ((dst & S->routes[i].mask) == S->routes[i].prefix) { r = i; break; }
        if (2 * (S->cn + 1) > S->ccap) {
            uint32_t nc = 2 * S->ccap;
            uint32_t *nk = calloc(nc, sizeof(uint32_t));
            int32_t *nv = calloc(nc, sizeof(int32_t));
            for (uint32_t j = 0; j < S->ccap; j++) if (S->cval[j]) {
                uint32_t g = (S->ckey[j] * 2654435761U) & (nc - 1);
                while (nv[g]) g = (g + 1) & (nc - 1);
                nk[g] = S->ckey[j]; nv[g] = S->cval[j];
            }
            free(S->ckey); free(S->cval);
            S->ckey = nk; S->cval = nv; S->ccap = nc;
            h = (dst * 2654435761U) & (nc - 1);
            while (nv[h]) h = (h + 1) & (nc - 1);
        }
        S->ckey[h] = dst; S->cval[h] = r + 1; S->cn++;
    }
    if (r >= S->nroutes) return 1;
    route_t *R = &S->routes[r];
    for (int32_t i = 0; i < R->n; i++) {
        port_t *Q = port_of(S, S->rports[R->off + i]);
        if (Q && Q->free_at > now) return 0;
    }
    return 1;
}

/* EgressQueue.transit: <0 (NAN) when it does not apply */
static double q_transit(port_t *Q, uint32_t plen, double now) {
    if (Q->fifo.n || Q->trim.n || Q->next_free > now) return NAN;
    Q->enqueued++; Q->dequeued++;
    if (!Q->max_depth_seen) Q->max_depth_seen = 1;
    if (Q->paced) Q->next_free = now + plen * Q->us_per_byte;
    return Q->next_free > now ? Q->next_free : now;
}

static int pass_through(struct core *K, int32_t s, double now, int64_t port, uint32_t plen,
                        uint8_t *data, uint32_t len) {
    sw_t *S = &K->sws[s];
    port_t *Q = port_of(S, port);
    if (!Q) { S->unconnected++; fb_free(data); return 0; }
    double start = now;
    double busy = q_transit(Q, plen, now);
    if (isnan(busy)) {
        if (Q->fifo.n + Q->trim.n) {
            snprintf(K->err, sizeof K->err, "R:switch %d: fast path to port %lld, whose queue "
                     "holds packets at %.17g us (its port oracle missed it)", s,
                     (long long)port, now);
            K->error = 1;
            fb_free(data);
            return -1;
        }
        start = Q->next_free;
        busy = q_transit(Q, plen, start);
    }
    Q->free_at = busy;
    if (busy > S->busy_until) S->busy_until = busy;
    return link_send(K, Q->link, start, data, len);
}

static double q_next_departure(port_t *Q, int *none) {
    double first;
    *none = 0;
    if (Q->trim.n) {
        first = fifo_front(&Q->trim)->enq;
        if (Q->fifo.n && fifo_front(&Q->fifo)->enq < first) first = fifo_front(&Q->fifo)->enq;
    } else if (Q->fifo.n) {
        first = fifo_front(&Q->fifo)->enq;
    } else {
        *none = 1;
        return 0;
    }
    if (!Q->paced) return first;
    return Q->next_free > first ? Q->next_free : first;
}

static int serve(struct core *K, int32_t s, int32_t k, double now);

static int enqueue(struct core *K, int32_t s, double now, int64_t port, job_t job) {
    sw_t *S = &K->sws[s];
    port_t *Q = port_of(S, port);
    if (!Q) { S->unconnected++; fb_free(job.data); ctx_put(K, job.ctx); return 0; }
    uint32_t qlen = Q->fifo.n;
    if (qlen >= (uint32_t)Q->depth) {
        int32_t trim = S->trim_bytes;
        if (trim && Q->trim.n < (uint32_t)Q->depth) {
            if (job.plen > 2 * (uint32_t)trim) { job.plen = trim; Q->trimmed++; }
            else Q->promoted++;
            job.enq = now; job.enq_qdepth = Q->trim.n;
            fifo_push(&Q->trim, job);
            Q->enqueued++;
        } else {
            Q->tail_drops++;
            fb_free(job.data); ctx_put(K, job.ctx);
            return 0;
        }
    } else {
        job.enq = now; job.enq_qdepth = qlen;
        fifo_push(&Q->fifo, job);
        Q->enqueued++;
        if ((int64_t)qlen + 1 > Q->max_depth_seen) Q->max_depth_seen = qlen + 1;
    }
    S->backlog++;
    Q->free_at = INFINITY;
    if (Q->pending) return 0;
    int none;
    double t = q_next_departure(Q, &none);
    int32_t k = S->slot[port];
    if (!none && t <= now) return serve(K, s, k, now);
    if (!none) {
        Q->pending = 1;
        schedule(K, t, EV_SERVE, s, k);
    }
    return 0;
}

static int serve(struct core *K, int32_t s, int32_t k, double now) {
    sw_t *S = &K->sws[s];
    port_t *Q = &S->ports[k];
    int none;
    Q->pending = 0;
    dirty_sw(K, s);
    /* EgressQueue.dequeue_into */
    fifo_t *f; int prio;
    if (Q->trim.n) { f = &Q->trim; prio = 1; }
    else { f = &Q->fifo; prio = 0; }
    if (!f->n) goto not_due;
    job_t *h = fifo_front(f);
    if (Q->paced) {
        double dep = Q->next_free > h->enq ? Q->next_free : h->enq;
        if (dep > now) goto not_due;
        Q->next_free = dep + h->plen * Q->us_per_byte;
    }
    job_t job = *h;
    fifo_pop(f);
    Q->last_trimmed = prio;
    Q->dequeued++;
    double td = now - job.enq;
    if (!(td > 0)) td = 0;
    int64_t deq_qdepth = f->n;
    /* SimSwitch._serve */
    S->backlog--;
    double busy = now + job.plen * Q->us_per_byte;
    Q->free_at = (deq_qdepth || Q->fifo.n + Q->trim.n) ? INFINITY : busy;
    if (busy > S->busy_until) S->busy_until = busy;
    double up = S->uptime;
    uint8_t *out = outbuf(K, job.len, S->out_slack);
    int64_t r = S->egress(S->P, job.ctx, frame_view(K, job.data, job.len), job.len,
                          (uint32_t)Q->port, job.plen,
                          (uint64_t)(int64_t)(now + up), (uint64_t)(int64_t)(job.enq + up),
                          (uint64_t)job.enq_qdepth, (uint64_t)(int64_t)td,
                          (uint64_t)deq_qdepth, (uint64_t)prio, out);
    fb_free(job.data);
    ctx_put(K, job.ctx);
    if (r < 0) {
        S->pipeline_drops++;
    } else {
        uint32_t olen = (uint32_t)r;
        if (Q->last_trimmed && S->trim_bytes && job.plen == (uint32_t)S->trim_bytes)
            olen = trim_frame(out, olen, (uint32_t)S->trim_bytes);
        if (link_send(K, Q->link, now, frame_pack(out, olen), olen) < 0) return -1;
    }
    {
        double t = q_next_departure(Q, &none);
        if (!none && !Q->pending) {
            Q->pending = 1;
            schedule(K, t > now ? t : now, EV_SERVE, s, k);
        }
    }
    return 0;
not_due:
    {
        double t = q_next_departure(Q, &none);
        if (!none) {
            Q->pending = 1;
            schedule(K, t > now ? t : now, EV_SERVE, s, k);
        }
    }
    return 0;
}

static int receive(struct core *K, int32_t s, double now, int32_t port, uint8_t *data,
                   uint32_t len) {
    sw_t *S = &K->sws[s];
    S->packets_in++;
    dirty_sw(K, s);
    if (S->record) {
        if (K->nlog == K->caplog) {
            K->caplog = K->caplog ? 2 * K->caplog : 1024;
            K->log = realloc(K->log, K->caplog * sizeof(struct core_log));
        }
        struct core_log g = {s, port, now, len, (char *)frame_full(data, len)};
        K->log[K->nlog++] = g;
    }
    const uint8_t *v = frame_view(K, data, len);
    uint64_t ts = (uint64_t)(int64_t)(now + S->uptime);
    if (S->fast_path && ((!S->backlog && now >= S->busy_until) || idle_for(S, v, len, now))) {
        S->fast_packets++;
        uint8_t *out = outbuf(K, len, S->out_slack);
        void *c = ctx_get(K);
        int64_t r = S->process(S->P, c, v, len, (uint32_t)port, ts, out);
        ctx_put(K, c);
        fb_free(data);
        if (r < 0) {
            S->pipeline_drops++;
            return 0;
        }
        uint32_t olen = (uint32_t)(r & 0xFFFFFFFF);
        return pass_through(K, s, now, r >> 32, len, frame_pack(out, olen), olen);
    }
    void *c = ctx_get(K);
    int64_t r = S->ingress(S->P, c, v, len, (uint32_t)port, ts);
    if (r < 0) {
        S->pipeline_drops++;
        ctx_put(K, c);
        fb_free(data);
        return 0;
    }
    job_t job = {data, c, len, (uint32_t)(r >> 24), 0.0, 0};
    return enqueue(K, s, now, r & 0xFFFF, job);
}

/* ---- the loop (sim.events.EventLoop.run) ---------------------------------------------- */
/* 0: nothing more to run now; > 0: run Python's event of that handle (at ``now``), or
 * CORE_NOTE: a host in C has a note for Python (``note_*``); -1: an error (``err``); <= -2:
 * a frame for a host arrived on link -2 - r (``r_frame``) */
int64_t core_step(struct core *K, double until, double before, int64_t limit) {
    if (K->r_owned) fb_free(K->r_frame);
    K->r_frame = NULL;
    K->r_owned = 0;
    K->error = 0;
    while (K->nheap && !K->stopped && K->n != limit) {
        double t = K->heap[0].t;
        if (t >= before || t >= K->horizon) break;
        if (t > until) {
            K->now = until;
            K->stopped = K->reached_until = 1;
            break;
        }
        ev_t e = heap_pop(K);
        K->now = t;
        K->cur_id = core_hash_key(e.kt, e.kid, e.kc);
        K->cur_child = 0;
        K->n++;
        K->events_run++;
        if (e.kind == EV_PY) {
            K->r_handle = e.arg;
            return e.arg;
        }
        if (e.kind == EV_SERVE) {
            if (serve(K, e.obj, (int32_t)e.arg, t) < 0) return -1;
            continue;
        }
        if (e.kind == EV_HOST) {
            if (host_tx(K, e.obj, t) < 0) return -1;
            continue;
        }
        /* EV_WIRE: Link._deliver */
        link_t *L = &K->links[e.obj];
        wf_t f = L->w[L->head];
        L->head = (L->head + 1) % L->cap;
        L->n--;
        if (L->n) {
            wf_t *nx = &L->w[L->head];
            ev_t ne = {nx->t, nx->kt, nx->kid, nx->kc, 0, EV_WIRE, e.obj};
            heap_push(K, ne);
        }
        if (L->dst_sw < 0 && L->dst_host >= 0) {   /* a host in C */
            uint32_t have = fb_have(f.data);
            int r = host_frame(K, L->dst_host, f.data, have < f.len ? have : f.len, f.len, t);
            if (r != 2) {
                fb_free(f.data);
                if (r < 0) return -1;
                if (r == 1) return CORE_NOTE;
                continue;
            }   /* 2: Python creates the flow's receiver first, as for a host in Python */
        }
        if (L->dst_sw < 0) {
            K->r_link = e.obj;
            if (fb_have(f.data) < f.len) {   /* whole, in vin: Python reads it before any call */
                uint8_t *v = grow(&K->vin, &K->capvin, f.len);
                frame_expand(v, f.data, f.len);
                fb_free(f.data);
                K->r_frame = (char *)v;
            } else {
                K->r_frame = (char *)f.data;
                K->r_owned = 1;
            }
            K->r_len = f.len;
            return -2 - (int64_t)e.obj;
        }
        if (receive(K, L->dst_sw, t, L->dst_port, f.data, f.len) < 0) return -1;
    }
    return 0;
}
"""
