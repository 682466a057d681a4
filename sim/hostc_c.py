"""The C text of the hosts' per-packet path, compiled into sim.core's module after its core.

It mirrors sim.host.SimHost's NIC and receive path and traffic.transport's SenderFlow,
ReceiverFlow, Connection and RttEstimator with the window algorithms NSCC, DCTCP and the
fixed window (traffic.congestion) line for line: the same float arithmetic in the same order,
the same frames byte for byte, the same events scheduled at the same moments (so the same
event keys). What a host does per packet — a data frame in and maybe an ACK out, an ACK in
and the window, RTT and timers updated, the NIC's next frame built and sent — runs here
without Python. Python keeps what is once per flow or rare: posting a flow (its
connection's initial state comes from the Python algorithm's object), a flow that completes
(the rank's program steps on), the timer tick (every ``tick`` per host; its receive set
stays a Python set, whose iteration order decides which delayed ACK goes first) and results.
sim/hostc.py is the Python face; tests/sim/test_hostc.py runs both paths in lock-step.
"""

CDEF = r"""
void hc_setup(struct core *K, int32_t nhosts, int32_t mss, int32_t window, int32_t ack_every,
              int32_t nack_gap, double rto, double ack_delay, double tick_s, double tick_us);
void hc_host(struct core *K, int32_t h, int32_t link, double us_per_byte,
             const uint8_t *mac, const uint8_t *gw, uint32_t ip, int64_t tick_handle,
             int32_t cc_kind, const double *cc);
void hc_job(struct core *K, int32_t h, int32_t job, int32_t ect);
int32_t hc_open(struct core *K, int32_t h, int64_t flow, int32_t rank, int32_t dst,
                int32_t step, int64_t nbytes, uint32_t dst_ip, int32_t prev, int32_t cache,
                double now_s, double first_rto, double min_rto, double max_rto, int32_t np,
                const int32_t *ports, const int32_t *draws, int32_t ndraws, int32_t *joined);
int32_t hc_conn_of(struct core *K, int32_t f);
void hc_make_ready(struct core *K, int32_t h, int32_t f);
void hc_ensure_tick(struct core *K, int32_t h, double now);
int32_t hc_kick(struct core *K, int32_t h, double now);
int32_t hc_rx_new(struct core *K, int32_t h, int64_t flow, int32_t src, int32_t dst,
                  int32_t npkts, uint32_t peer_ip);
int32_t hc_arrive(struct core *K, int32_t h, double now, const uint8_t *frame, uint32_t have,
                  uint32_t len);
void hc_bad(struct core *K, int32_t h);
int32_t hc_rx_done(struct core *K, int32_t r);
void hc_tick_timers(struct core *K, int32_t h, double now);
int32_t hc_take_added(struct core *K, int32_t h, int64_t *out, int32_t cap);
int32_t hc_rx_tick(struct core *K, int32_t h, int32_t r, double now);
int32_t hc_tick_end(struct core *K, int32_t h, double now, int32_t pending);
void hc_link_host(struct core *K, int32_t link, int32_t h);
void hc_counts(struct core *K, int32_t h, int64_t *out);
void hc_set_counts(struct core *K, int32_t h, const int64_t *in);
void hc_tx_stats(struct core *K, int32_t f, int64_t *o, double *d);
void hc_tx_uses(struct core *K, int32_t f, int64_t *o);
void hc_rx_stats(struct core *K, int32_t r, int64_t *o, double *d);
void hc_rx_rdist(struct core *K, int32_t r, int64_t *o);
"""

SOURCE = r"""
/* ==== the hosts (sim.host.SimHost, traffic.transport) ================================= */
#define H_HDR_AT 42
#define H_ACK_AT 70
#define H_ACK_LEN 94
#define HF_ACK 0x01
#define HF_NACK 0x02
#define HF_RETX 0x04
#define HF_LAST 0x08
#define HF_ACKREQ 0x20
#define HF_DUP 0x40
#define HF_TRIM 0x80
#define H_VERSION 2
#define H_ROCE 4791
#define H_SACK 64
enum { CC_NONE = 0, CC_NSCC = 1, CC_DCTCP = 2 };
enum { NOTE_RX_DONE = 1, NOTE_TX_DONE = 2 };

typedef struct { int32_t *v; uint32_t cap, head, n; } iq_t;   /* a deque of indices */

static void iq_push(iq_t *q, int32_t x) {
    if (q->n == q->cap) {
        uint32_t nc = q->cap ? 2 * q->cap : 4;
        int32_t *v = malloc(nc * sizeof(int32_t));
        for (uint32_t i = 0; i < q->n; i++) v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v; q->cap = nc; q->head = 0;
    }
    q->v[(q->head + q->n) % q->cap] = x;
    q->n++;
}

static inline int32_t iq_at(const iq_t *q, uint32_t i) { return q->v[(q->head + i) % q->cap]; }

static int32_t iq_pop(iq_t *q) {
    int32_t x = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return x;
}

static void iq_remove(iq_t *q, int32_t x) {   /* list.remove / deque.remove: the first */
    for (uint32_t i = 0; i < q->n; i++) {
        if (iq_at(q, i) != x) continue;
        for (uint32_t j = i; j + 1 < q->n; j++)
            q->v[(q->head + j) % q->cap] = q->v[(q->head + j + 1) % q->cap];
        q->n--;
        return;
    }
}

typedef struct { int64_t *k; int32_t *v; uint32_t cap, n; } imap_t;   /* key -> index */

static inline uint32_t imap_slot(int64_t k, uint32_t cap) {
    return (uint32_t)(((uint64_t)k * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

static int32_t imap_get(const imap_t *m, int64_t k) {
    if (!m->cap) return -1;
    for (uint32_t i = imap_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->v[i]) return -1;
        if (m->k[i] == k) return m->v[i] - 1;
    }
}

static void imap_put(imap_t *m, int64_t k, int32_t v) {
    if (2 * (m->n + 1) > m->cap) {
        uint32_t nc = m->cap ? 2 * m->cap : 64;
        int64_t *nk = calloc(nc, sizeof(int64_t));
        int32_t *nv = calloc(nc, sizeof(int32_t));
        for (uint32_t j = 0; j < m->cap; j++) if (m->v[j]) {
            uint32_t i = imap_slot(m->k[j], nc);
            while (nv[i]) i = (i + 1) & (nc - 1);
            nk[i] = m->k[j]; nv[i] = m->v[j];
        }
        free(m->k); free(m->v);
        m->k = nk; m->v = nv; m->cap = nc;
    }
    uint32_t i = imap_slot(k, m->cap);
    while (m->v[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->v[i]) m->n++;
    m->k[i] = k; m->v[i] = v + 1;
}

static inline int64_t hkey(int32_t h, int64_t flow) { return (flow << 20) | h; }

/* traffic.congestion: NSCC, DCTCP, the fixed window ("none") */
typedef struct {
    int32_t kind;
    double cwnd, hold, cap, floor; int64_t reductions;
    int32_t has_base, measure_base, has_delay, has_target;
    double base_rtt, delay, qtarget, target, ai, pi, beta, max_mdf;
    double ssthresh, alpha, g, win_end; int64_t win_acked, win_marked;
    double w;
} cc_t;

/* traffic.congestion.rtt.RttEstimator (granularity 0) */
typedef struct { int32_t has; double srtt, rttvar, rto, lo, hi; int64_t samples, backoffs; }
    rtt_t;

/* traffic.transport.Connection */
typedef struct {
    cc_t cc; rtt_t rtt; int32_t inflight; iq_t sending, active;
    int32_t has_last_finish, has_timeout_at; double last_finish, timeout_at;
} cn_t;

/* traffic.transport.SenderFlow with sim.host._Tx and its path policy */
typedef struct {
    int64_t flow; int32_t host, conn, rank, dst, step; uint32_t dst_ip;
    int32_t npkts; int64_t nbytes;
    uint8_t *acked, *sends, *queued; double *sent_at;
    int32_t n_acked, cum, next_new, ack_request;
    double *tl_t; int32_t *tl_s; uint32_t tl_n, tl_cap, tl_head;
    iq_t retx;
    int64_t packets_sent, spurious, retransmissions, timeouts, nacks, trim_nacks, ce_acked,
        n_acks;
    double w_sum;
    int32_t has_start, has_finish; double start, finish;
    int32_t np, rr_next, *ports, *draws; uint32_t mask; uint64_t t; int64_t *uses;
    int32_t ready, has_armed, fin_noted; double armed;
} sf_t;

/* traffic.transport.ReceiverFlow with sim.host._Rx */
typedef struct {
    int64_t flow; int32_t host, src, dst, npkts; uint32_t peer_ip; uint32_t sport;
    int64_t ce_count;
    uint8_t *got, *ce; int32_t any_ce, received, cum, highest; int64_t bytes;
    int64_t packets, duplicates, trimmed, reordered; int64_t *rdist;
    int32_t *pend; uint32_t npend, cappend;
    double last_ack; int32_t has_nacked, nacked_cum; double nacked_t;
    int32_t has_start, has_finish; double start, finish;
    int32_t in_set;
} rf_t;

typedef struct { double t; int64_t flow; int32_t f; } tmr_t;

typedef struct {
    int32_t link; double upb, nic_free; int32_t tx_sched, tick_sched; int64_t tick_handle;
    uint8_t mac[6], gw[6]; uint32_t ip; int32_t has_job, job, ect;
    uint8_t *aq; uint32_t aq_cap, aq_head, aq_n;   /* pending ACK frames, H_ACK_LEN each */
    iq_t ready;
    tmr_t *tm; uint32_t ntm, captm;
    int64_t *added; uint32_t nadded, capadded;   /* flows that joined Python's rx set */
    int64_t frames_sent, bytes_sent, frames_received, bad_frames, n_tx, n_fin;
    cc_t tmpl;   /* a new connection's algorithm (its state depends on the line rate) */
} ht_t;

typedef struct hosts {
    int32_t nh; ht_t *h;
    sf_t *sf; int32_t nsf, capsf;
    rf_t *rf; int32_t nrf, caprf;
    cn_t *cn; int32_t ncn, capcn;
    imap_t txm, rxm;
    int32_t mss, window, ack_every, nack_gap;
    double rto, ack_delay, tick_s, tick_us;
} hosts_t;

static inline void be16(uint8_t *o, uint32_t v) { o[0] = (uint8_t)(v >> 8); o[1] = (uint8_t)v; }
static inline void be32(uint8_t *o, uint32_t v) {
    o[0] = (uint8_t)(v >> 24); o[1] = (uint8_t)(v >> 16); o[2] = (uint8_t)(v >> 8);
    o[3] = (uint8_t)v;
}
static inline void be64(uint8_t *o, uint64_t v) { be32(o, (uint32_t)(v >> 32)); be32(o + 4, (uint32_t)v); }
static inline uint32_t rd16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static inline uint32_t rd32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t rd64(const uint8_t *p) { return ((uint64_t)rd32(p) << 32) | rd32(p + 4); }

/* sim.frames.l2l3_header */
static void l2l3(uint8_t *o, const uint8_t *src_mac, const uint8_t *dst_mac, uint32_t sip,
                 uint32_t dip, uint32_t sport, uint32_t dport, uint32_t plen, uint32_t tos) {
    memcpy(o, dst_mac, 6); memcpy(o + 6, src_mac, 6);
    o[12] = 0x08; o[13] = 0x00;
    uint32_t total = 28 + plen;
    uint64_t s = (uint64_t)(0x4500 | tos) + total + 1 + 0x4000 + ((64 << 8) | 17)
        + (sip >> 16) + (sip & 0xFFFF) + (dip >> 16) + (dip & 0xFFFF);
    uint64_t m = s % 0xFFFF;
    if (m == 0 && s) m = 0xFFFF;
    o[14] = 0x45; o[15] = (uint8_t)tos; be16(o + 16, total); be16(o + 18, 1);
    be16(o + 20, 0x4000); o[22] = 64; o[23] = 17; be16(o + 24, (uint32_t)(~m & 0xFFFF));
    be32(o + 26, sip); be32(o + 30, dip);
    be16(o + 34, sport); be16(o + 36, dport); be16(o + 38, 8 + plen); be16(o + 40, 0);
}

/* ---- congestion control and RTT ---- */
static inline double cc_window(const cc_t *c) { return c->kind == CC_NONE ? c->w : c->cwnd; }

static int cc_cut(cc_t *c, double factor) {   /* WindowControl._cut (+ Dctcp's ssthresh) */
    if (c->hold > 0) return 0;
    c->hold = c->cwnd;
    double x = c->cwnd * factor;
    c->cwnd = x > c->floor ? x : c->floor;
    c->reductions++;
    if (c->kind == CC_DCTCP) c->ssthresh = c->cwnd;
    return 1;
}

static void cc_collapse(cc_t *c) { c->cwnd = c->floor; c->hold = 0.0; c->reductions++; }

static void cc_on_ack(cc_t *c, int64_t acked, int64_t marked, int32_t has_rtt, double rtt) {
    if (acked <= 0 || c->kind == CC_NONE) return;
    double hold = c->hold - (double)acked;
    if (c->kind == CC_NSCC) {
        c->hold = hold > 0 ? hold : 0.0;
        if (has_rtt) {
            if (c->measure_base) {
                double b = !c->has_base ? rtt : (rtt < c->base_rtt ? rtt : c->base_rtt);
                c->base_rtt = b; c->has_base = 1;
                c->target = b + c->qtarget; c->has_target = 1;
            }
            c->delay = rtt; c->has_delay = 1;
        }
        if (!c->has_delay || !c->has_target) return;
        double delay = c->delay, target = c->target;
        if (delay <= target) {
            if (!marked) {
                double cwnd = c->cwnd;
                cwnd += (c->ai + c->pi * (target - delay) / target) * (double)acked / cwnd;
                c->cwnd = cwnd < c->cap ? cwnd : c->cap;
            }
        } else if (marked) {
            double a = 1 - c->beta * (delay - target) / delay, b = 1 - c->max_mdf;
            cc_cut(c, b > a ? b : a);
        }
        return;
    }
    /* DCTCP */
    hold = hold > 0 ? hold : 0.0;
    c->hold = hold;
    c->win_acked += acked;
    double cwnd = c->cwnd;
    if (marked) {
        if (marked > acked) marked = acked;
        c->win_marked += marked;
        if (hold <= 0) {
            c->hold = cwnd;
            cwnd *= 1 - c->alpha / 2;
            if (cwnd < c->floor) cwnd = c->floor;
            c->ssthresh = cwnd;
            c->reductions++;
        }
    } else if (cwnd < c->ssthresh) {
        cwnd += (double)acked;
    } else {
        cwnd += (double)acked / cwnd;
    }
    c->cwnd = cwnd < c->cap ? cwnd : c->cap;
    if ((double)c->win_acked >= c->win_end) {
        c->alpha = (1 - c->g) * c->alpha + c->g * (double)c->win_marked / (double)c->win_acked;
        c->win_acked = c->win_marked = 0;
        c->win_end = c->cwnd;
    }
}

static void cc_on_nack(cc_t *c) {
    if (c->kind == CC_NSCC) cc_cut(c, 1 - c->max_mdf);
    else if (c->kind == CC_DCTCP) cc_cut(c, 0.5);
}

static void cc_on_trim_nack(cc_t *c) {
    if (c->kind == CC_NSCC) {
        double x = c->cwnd - 1;
        c->cwnd = x > c->floor ? x : c->floor;
    } else {
        cc_on_nack(c);
    }
}

static void cc_on_timeout(cc_t *c) {
    if (c->kind == CC_NSCC) cc_collapse(c);
    else if (c->kind == CC_DCTCP) {
        double x = c->cwnd / 2;
        c->ssthresh = x > c->floor ? x : c->floor;
        cc_collapse(c);
    }
}

static double rtt_clamp(const rtt_t *r, double x) {
    double m = x > r->lo ? x : r->lo;
    return m < r->hi ? m : r->hi;
}

static void rtt_sample(rtt_t *r, double x) {
    if (x < 0) return;
    double srtt, rttvar;
    if (!r->has) { srtt = x; rttvar = x / 2; }
    else {
        double d = r->srtt - x;
        rttvar = 0.75 * r->rttvar + 0.25 * (d >= 0 ? d : -d);
        srtt = 0.875 * r->srtt + 0.125 * x;
    }
    r->srtt = srtt; r->rttvar = rttvar; r->has = 1;
    r->samples++;
    double v = 4 * rttvar;
    double rto = srtt + (v > 0.0 ? v : 0.0);
    r->rto = rto < r->lo ? r->lo : (rto > r->hi ? r->hi : rto);
}

static void rtt_backoff(rtt_t *r) {
    r->backoffs++;
    double x = 2 * r->rto;
    r->rto = x < r->hi ? x : r->hi;
}

/* ---- the sender (SenderFlow) ---- */
static inline void tl_append(sf_t *s, double t, int32_t seq) {
    if (s->tl_n == s->tl_cap) {
        s->tl_cap = s->tl_cap ? 2 * s->tl_cap : 64;
        s->tl_t = realloc(s->tl_t, s->tl_cap * sizeof(double));
        s->tl_s = realloc(s->tl_s, s->tl_cap * sizeof(int32_t));
    }
    s->tl_t[s->tl_n] = t; s->tl_s[s->tl_n] = seq; s->tl_n++;
}

static void sf_queue(sf_t *s, int32_t seq) {
    if (!s->acked[seq] && !s->queued[seq]) { s->queued[seq] = 1; iq_push(&s->retx, seq); }
}

/* next_packet (a window algorithm: never paced): 1 and (seq, retx), or 0 */
static int sf_next(hosts_t *H, sf_t *s, int32_t fi, double now, int32_t *seq, int32_t *retx) {
    cn_t *c = &H->cn[s->conn];
    while (s->retx.n) {
        int32_t q = iq_pop(&s->retx);
        s->queued[q] = 0;
        if (!s->acked[q]) {
            s->retransmissions++;
            s->ack_request = 1;
            s->sent_at[q] = now;
            if (s->sends[q] < 255) s->sends[q]++;
            tl_append(s, now, q);
            s->packets_sent++;
            *seq = q; *retx = 1;
            return 1;
        }
    }
    int32_t nxt = s->next_new;
    if (nxt < s->npkts && c->sending.n && iq_at(&c->sending, 0) == fi) {
        double w = cc_window(&c->cc);
        int32_t cap = H->window;
        int32_t inflight = c->inflight;
        int ok = w >= cap ? inflight < cap : ((double)(inflight + 1) <= w || inflight == 0);
        if (ok) {
            if (!s->has_start) { s->has_start = 1; s->start = now; }
            s->next_new = nxt = nxt + 1;
            c->inflight = inflight + 1;
            if (nxt == s->npkts) iq_pop(&c->sending);
            s->ack_request = nxt == s->npkts ||
                !(w >= cap ? inflight + 1 < cap : (double)(inflight + 2) <= w);
            int32_t q = nxt - 1;
            s->sent_at[q] = now;
            s->sends[q] = 1;
            tl_append(s, now, q);
            s->packets_sent++;
            *seq = q; *retx = 0;
            return 1;
        }
    }
    return 0;
}

static void cn_finished(cn_t *c, int32_t fi, double now) {
    iq_remove(&c->active, fi);
    iq_remove(&c->sending, fi);
    c->has_last_finish = 1; c->last_finish = now;
}

static void sf_on_ack(hosts_t *H, sf_t *s, int32_t fi, uint32_t acum, uint32_t base,
                      uint64_t sack, uint64_t ce, int nack, int dup, int trimmed, double now) {
    cn_t *c = &H->cn[s->conn];
    int32_t npkts = s->npkts;
    int64_t n = 0, marked = 0;
    double last = -1.0;
    int64_t cum = acum < (uint32_t)npkts ? (int64_t)acum : npkts;
    for (int64_t q = s->cum; q < cum; q++) {
        if (s->acked[q]) continue;
        s->acked[q] = 1;
        n++;
        int64_t d = q - (int64_t)base;
        if (ce && d >= 0 && d < H_SACK && (ce >> d) & 1) marked++;
        if (s->sends[q] == 1 && s->sent_at[q] > last) last = s->sent_at[q];
    }
    if (cum > s->cum) s->cum = (int32_t)cum;
    uint64_t bits = sack;
    while (bits) {
        int i = __builtin_ctzll(bits);
        bits &= bits - 1;
        int64_t q = (int64_t)base + i;
        if (q < npkts && !s->acked[q]) {
            s->acked[q] = 1;
            n++;
            if ((ce >> i) & 1) marked++;
            if (s->sends[q] == 1 && s->sent_at[q] > last) last = s->sent_at[q];
        }
    }
    if (dup && s->spurious < s->retransmissions) s->spurious++;
    if (n) {
        s->n_acked += (int32_t)n;
        c->inflight -= (int32_t)n;
        s->ce_acked += marked;
        int32_t has_rtt = 0;
        double rtt = 0.0;
        if (last >= 0) {
            rtt = now - last;
            has_rtt = 1;
            rtt_sample(&c->rtt, rtt);
        }
        cc_on_ack(&c->cc, n, marked, has_rtt, rtt);
        double w = cc_window(&c->cc);
        s->w_sum += w < H->window ? w : (double)H->window;
        s->n_acks++;
    }
    if (trimmed) {
        int64_t q = base;
        if (nack && q < npkts && !s->acked[q]) {
            s->nacks++;
            s->trim_nacks++;
            sf_queue(s, (int32_t)q);
            cc_on_trim_nack(&c->cc);
        }
    } else if (nack && acum < (uint32_t)npkts && !s->acked[acum]) {
        s->nacks++;
        if (now - s->sent_at[acum] >= c->rtt.rto / 4) {
            sf_queue(s, (int32_t)acum);
            cc_on_nack(&c->cc);
        }
    }
    if (s->n_acked == npkts && !s->has_finish) {
        s->has_finish = 1; s->finish = now;
        cn_finished(c, fi, now);
        s->tl_n = s->tl_head = 0;   /* no timer can fire any more */
    }
}

static int sf_next_timeout(hosts_t *H, sf_t *s, double *t) {
    if (s->tl_head >= s->tl_n) return 0;
    *t = s->tl_t[s->tl_head] + H->cn[s->conn].rtt.rto;
    return 1;
}

static void sf_on_tick(hosts_t *H, sf_t *s, double now) {
    cn_t *c = &H->cn[s->conn];
    uint32_t h = s->tl_head, n = s->tl_n;
    double rto = c->rtt.rto;
    int fired = 0;
    while (h < n && s->tl_t[h] + rto <= now) {
        double t = s->tl_t[h];
        int32_t q = s->tl_s[h];
        h++;
        if (s->acked[q] || s->sent_at[q] != t) continue;
        s->timeouts++;
        sf_queue(s, q);
        fired = 1;
    }
    if (h == n) { s->tl_n = 0; h = 0; }
    else if (h >= 1024 && 2 * h >= n) {
        memmove(s->tl_t, s->tl_t + h, (n - h) * sizeof(double));
        memmove(s->tl_s, s->tl_s + h, (n - h) * sizeof(int32_t));
        s->tl_n = n - h;
        h = 0;
    }
    s->tl_head = h;
    if (fired && !(c->has_timeout_at && c->timeout_at == now)) {
        c->has_timeout_at = 1; c->timeout_at = now;
        rtt_backoff(&c->rtt);
        cc_on_timeout(&c->cc);
    }
}

/* ---- the receiver (ReceiverFlow) ---- */
static void queue_ack(hosts_t *H, ht_t *h, rf_t *x, uint32_t cum, uint32_t base, uint64_t sack,
                      int nack, uint64_t ce, int dup, int trimmed) {
    if (h->aq_n == h->aq_cap) {
        uint32_t nc = h->aq_cap ? 2 * h->aq_cap : 16;
        uint8_t *v = malloc((size_t)nc * H_ACK_LEN);
        for (uint32_t i = 0; i < h->aq_n; i++)
            memcpy(v + (size_t)i * H_ACK_LEN,
                   h->aq + (size_t)((h->aq_head + i) % h->aq_cap) * H_ACK_LEN, H_ACK_LEN);
        free(h->aq);
        h->aq = v; h->aq_cap = nc; h->aq_head = 0;
    }
    uint8_t *o = h->aq + (size_t)((h->aq_head + h->aq_n) % h->aq_cap) * H_ACK_LEN;
    h->aq_n++;
    l2l3(o, h->mac, h->gw, h->ip, x->peer_ip, x->sport, H_ROCE, 52, 0);
    uint32_t flags = HF_ACK | (nack ? HF_NACK : 0) | (dup ? HF_DUP : 0) | (trimmed ? HF_TRIM : 0);
    o[42] = H_VERSION; o[43] = (uint8_t)flags; be16(o + 44, (uint32_t)h->job);
    be16(o + 46, (uint32_t)x->dst); be16(o + 48, (uint32_t)x->src); be16(o + 50, 0);
    be16(o + 52, 0); be32(o + 54, (uint32_t)x->flow); be32(o + 58, cum); be32(o + 62, 0);
    be16(o + 66, 0); be16(o + 68, (uint32_t)(x->ce_count < 0xFFFF ? x->ce_count : 0xFFFF));
    be32(o + 70, cum); be32(o + 74, base); be64(o + 78, sack); be64(o + 86, ce);
    x->ce_count = 0;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static uint64_t bits_of(const uint8_t *v, int64_t base, int32_t n) {
    uint64_t b = 0;
    for (int j = 0; j < H_SACK && base + j < n; j++) if (v[base + j]) b |= (uint64_t)1 << j;
    return b;
}

/* ReceiverFlow.ack, its ACKs queued at once (sim.host._queue_acks): how many */
static int rf_ack(hosts_t *H, ht_t *h, rf_t *x, double now, int nack, int dup) {
    x->last_ack = now;
    int32_t *p = x->pend;
    uint32_t n = x->npend, i = 0;
    x->npend = 0;
    if (n > 1) qsort(p, n, sizeof(int32_t), cmp_i32);
    int count = 0;
    while (i < n) {
        int64_t base = p[i];
        uint64_t sack = bits_of(x->got, base, x->npkts);
        uint64_t ce = x->any_ce ? bits_of(x->ce, base, x->npkts) : 0;
        queue_ack(H, h, x, (uint32_t)x->cum, (uint32_t)base, sack, nack, ce, dup, 0);
        count++;
        nack = dup = 0;
        while (i < n && p[i] < base + H_SACK) i++;
    }
    if (!count || nack) {
        queue_ack(H, h, x, (uint32_t)x->cum, (uint32_t)x->cum + 1, 0, nack, 0, dup, 0);
        count++;
    }
    return count;
}

static inline void rf_pend(rf_t *x, int32_t seq) {
    if (x->npend == x->cappend) {
        x->cappend = x->cappend ? 2 * x->cappend : 16;
        x->pend = realloc(x->pend, x->cappend * sizeof(int32_t));
    }
    x->pend[x->npend++] = seq;
}

/* on_data: 1 if the packet was new; *q: ACKs queued */
static int rf_on_data(hosts_t *H, ht_t *h, rf_t *x, uint32_t seq, uint32_t length, int retx,
                      double now, int ce, int ack_req, int *q) {
    int32_t npkts = x->npkts;
    if (seq >= (uint32_t)npkts) return 0;
    if (ce) { x->ce[seq] = 1; x->any_ce = 1; }
    x->packets++;
    if (!x->has_start) { x->has_start = 1; x->start = now; }
    if (x->got[seq]) {
        x->duplicates++;
        rf_pend(x, (int32_t)seq);
        *q += rf_ack(H, h, x, now, 0, 1);
        return 0;
    }
    x->got[seq] = 1;
    int32_t received = ++x->received;
    x->bytes += length;
    int32_t highest = x->highest;
    if ((int32_t)seq < highest) {
        if (!retx) {
            x->reordered++;
            if (!x->rdist) x->rdist = calloc(npkts, sizeof(int64_t));
            x->rdist[highest - (int32_t)seq]++;
        }
    } else {
        x->highest = highest = (int32_t)seq;
    }
    int32_t cum = x->cum;
    if ((int32_t)seq == cum) {
        cum++;
        while (cum < npkts && x->got[cum]) cum++;
        x->cum = cum;
    }
    rf_pend(x, (int32_t)seq);
    if (received == npkts) {
        x->has_finish = 1; x->finish = now;
        *q += rf_ack(H, h, x, now, 0, 0);
        return 1;
    }
    if (highest - cum >= H->nack_gap) {
        if (!x->has_nacked || x->nacked_cum != cum || now - x->nacked_t >= H->rto) {
            x->has_nacked = 1; x->nacked_cum = cum; x->nacked_t = now;
            *q += rf_ack(H, h, x, now, 1, 0);
            return 1;
        }
    }
    if (x->npend >= (uint32_t)H->ack_every || retx || ack_req) *q += rf_ack(H, h, x, now, 0, 0);
    return 1;
}

/* ---- the host (SimHost) ---- */
static inline int tm_lt(const tmr_t *a, const tmr_t *b) {
    return a->t != b->t ? a->t < b->t : a->flow < b->flow;
}

static void tm_push(ht_t *h, tmr_t e) {
    if (h->ntm == h->captm) {
        h->captm = h->captm ? 2 * h->captm : 16;
        h->tm = realloc(h->tm, h->captm * sizeof(tmr_t));
    }
    uint32_t i = h->ntm++;
    while (i > 0) {
        uint32_t p = (i - 1) >> 1;
        if (!tm_lt(&e, &h->tm[p])) break;
        h->tm[i] = h->tm[p];
        i = p;
    }
    h->tm[i] = e;
}

static tmr_t tm_pop(ht_t *h) {
    tmr_t top = h->tm[0], last = h->tm[--h->ntm];
    uint32_t n = h->ntm, i = 0;
    if (n) {
        for (;;) {
            uint32_t c = 2 * i + 1;
            if (c >= n) break;
            if (c + 1 < n && tm_lt(&h->tm[c + 1], &h->tm[c])) c++;
            if (!tm_lt(&h->tm[c], &last)) break;
            h->tm[i] = h->tm[c];
            i = c;
        }
        h->tm[i] = last;
    }
    return top;
}

static void host_arm(hosts_t *H, ht_t *h, int32_t fi) {   /* SimHost._arm */
    sf_t *s = &H->sf[fi];
    double t;
    if (sf_next_timeout(H, s, &t) && (!s->has_armed || t < s->armed - H->tick_s)) {
        s->has_armed = 1; s->armed = t;
        tmr_t e = {t, s->flow, fi};
        tm_push(h, e);
    }
}

static void host_ready(hosts_t *H, ht_t *h, int32_t fi) {   /* SimHost._make_ready */
    sf_t *s = &H->sf[fi];
    if (!s->ready && s->n_acked != s->npkts) { s->ready = 1; iq_push(&h->ready, fi); }
}

static void host_ensure_tick(struct core *K, ht_t *h, double now) {
    hosts_t *H = K->hosts;
    if (!h->tick_sched && h->has_job) {
        h->tick_sched = 1;
        schedule(K, now + H->tick_us, EV_PY, 0, h->tick_handle);
    }
}

/* SimHost._next_data: the next data frame's first 70 bytes into ``o``; its length, or 0 */
static uint32_t host_next_data(hosts_t *H, ht_t *h, double now, uint8_t *o) {
    double now_s = now * 1e-6;
    while (h->ready.n) {
        int32_t fi = iq_pop(&h->ready);
        sf_t *s = &H->sf[fi];
        int32_t seq, retx;
        if (s->n_acked == s->npkts || !sf_next(H, s, fi, now_s, &seq, &retx)) {
            s->ready = 0;
            continue;
        }
        iq_push(&h->ready, fi);
        if (!s->has_armed) host_arm(H, h, fi);
        cn_t *c = &H->cn[s->conn];
        if (!retx && s->next_new == s->npkts && c->sending.n)
            host_ready(H, h, iq_at(&c->sending, 0));
        uint32_t length, flags;
        if (seq == s->npkts - 1) {
            length = (uint32_t)(s->nbytes - (int64_t)seq * H->mss);
            flags = retx ? (HF_RETX | HF_LAST) : HF_LAST;
        } else {
            length = (uint32_t)H->mss;
            flags = retx ? HF_RETX : 0;
        }
        if (s->ack_request) flags |= HF_ACKREQ;
        int32_t qp;
        if (s->draws) { qp = s->draws[s->t & s->mask]; s->t++; }
        else { qp = s->rr_next; s->rr_next = qp + 1 < s->np ? qp + 1 : 0; }
        s->uses[qp]++;
        l2l3(o, h->mac, h->gw, h->ip, s->dst_ip, (uint32_t)s->ports[qp], H_ROCE, 28 + length,
             h->ect ? 0x02 : 0);
        o[42] = H_VERSION; o[43] = (uint8_t)flags; be16(o + 44, (uint32_t)h->job);
        be16(o + 46, (uint32_t)s->rank); be16(o + 48, (uint32_t)s->dst);
        be16(o + 50, (uint32_t)s->step & 0xFFFF); be16(o + 52, (uint32_t)qp);
        be32(o + 54, (uint32_t)s->flow); be32(o + 58, (uint32_t)seq);
        be32(o + 62, (uint32_t)s->npkts); be16(o + 66, length); be16(o + 68, 0);
        return 70 + length;
    }
    return 0;
}

/* SimHost._tx_event: the NIC is free; pending ACKs first */
static int host_tx(struct core *K, int32_t hi, double now) {
    hosts_t *H = K->hosts;
    ht_t *h = &H->h[hi];
    h->tx_sched = 0;
    uint8_t buf[H_ACK_LEN];
    uint32_t n, have;
    if (h->aq_n) {
        memcpy(buf, h->aq + (size_t)h->aq_head * H_ACK_LEN, H_ACK_LEN);
        h->aq_head = (h->aq_head + 1) % h->aq_cap;
        h->aq_n--;
        n = have = H_ACK_LEN;
    } else {
        n = host_next_data(H, h, now, buf);
        if (!n) return 0;
        have = 70;
    }
    h->frames_sent++;
    h->bytes_sent += n;
    uint32_t keep = nonzero_len(buf, have);
    uint8_t *p = fb_alloc(keep);
    memcpy(p, buf, keep);
    fb_set_have(p, keep);
    if (link_send(K, h->link, now, p, n) < 0) return -1;
    double t = now + n * h->upb;
    h->nic_free = t;
    h->tx_sched = 1;
    schedule(K, t, EV_HOST, hi, 0);
    return 0;
}

static int host_kick(struct core *K, int32_t hi, double now) {   /* SimHost._kick */
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    if (h->tx_sched) return 0;
    if (h->nic_free > now) {
        h->tx_sched = 1;
        schedule(K, h->nic_free, EV_HOST, hi, 0);
        return 0;
    }
    return host_tx(K, hi, now);
}

static int host_note(struct core *K, int32_t kind, int32_t hi, int64_t flow, int32_t rank) {
    K->note_kind = kind; K->note_host = hi; K->note_flow = flow; K->note_rank = rank;
    return 1;
}

/* SimHost.arrive: 0 done, 1 a note for Python (a flow completed), 2 Python must first
 * create the flow's receiver (nothing counted yet), -1 an error */
static int host_frame(struct core *K, int32_t hi, const uint8_t *data, uint32_t have,
                      uint32_t n, double now) {
    hosts_t *H = K->hosts;
    ht_t *h = &H->h[hi];
    uint8_t f[H_ACK_LEN];
    uint32_t k = have < H_ACK_LEN ? have : H_ACK_LEN;
    if (k > n) k = n;
    memcpy(f, data, k);
    memset(f + k, 0, H_ACK_LEN - k);
    if (!h->has_job || n < H_ACK_AT) { h->frames_received++; h->bad_frames++; return 0; }
    uint32_t flags = f[43];
    if (rd16(f + 44) != (uint32_t)h->job) { h->frames_received++; h->bad_frames++; return 0; }
    int64_t flow = rd32(f + 54);
    double now_s = now * 1e-6;
    if (flags & HF_ACK) {
        h->frames_received++;
        int32_t fi = imap_get(&H->txm, hkey(hi, flow));
        if (fi < 0 || n < H_ACK_LEN) { h->bad_frames++; return 0; }
        sf_t *s = &H->sf[fi];
        sf_on_ack(H, s, fi, rd32(f + 70), rd32(f + 74), rd64(f + 78), rd64(f + 86),
                  flags & HF_NACK, flags & HF_DUP, flags & HF_TRIM, now_s);
        cn_t *c = &H->cn[s->conn];
        for (uint32_t i = 0; i < c->active.n; i++) {
            int32_t o = iq_at(&c->active, i);
            if (o != fi) host_ready(H, h, o);
        }
        if (s->n_acked == s->npkts) {
            if (!s->fin_noted) {
                s->fin_noted = 1;
                h->n_fin++;
                return host_note(K, NOTE_TX_DONE, hi, flow, s->rank);   /* Python kicks */
            }
        } else {
            host_arm(H, h, fi);
            host_ready(H, h, fi);
        }
        return host_kick(K, hi, now);
    }
    int32_t ri = imap_get(&H->rxm, hkey(hi, flow));
    if (ri < 0) return 2;
    h->frames_received++;
    rf_t *x = &H->rf[ri];
    uint32_t seq = rd32(f + 58), length = rd16(f + 66);
    int q = 0;
    if (n < H_ACK_AT + length) {   /* cut to its headers at a full queue: on_trimmed */
        if (seq >= (uint32_t)x->npkts) return 0;
        x->trimmed++;
        if (!x->has_start) { x->has_start = 1; x->start = now_s; }
        if (x->got[seq]) return 0;
        queue_ack(H, h, x, (uint32_t)x->cum, seq, 0, 1, 0, 0, 1);
        return host_kick(K, hi, now);
    }
    int ce = (f[15] & 0x03) == 0x03;
    if (ce) x->ce_count++;
    x->sport = rd16(f + 34);
    int fresh = rf_on_data(H, h, x, seq, length, flags & HF_RETX, now_s, ce,
                           flags & HF_ACKREQ, &q);
    if (q && host_kick(K, hi, now) < 0) return -1;
    x = &H->rf[ri];
    if (x->npend) {
        if (!x->in_set) {
            x->in_set = 1;
            if (h->nadded == h->capadded) {
                h->capadded = h->capadded ? 2 * h->capadded : 16;
                h->added = realloc(h->added, h->capadded * sizeof(int64_t));
            }
            h->added[h->nadded++] = x->flow;
        }
        if (!h->tick_sched) host_ensure_tick(K, h, now);
    }
    if (fresh && x->received == x->npkts) return host_note(K, NOTE_RX_DONE, hi, flow, x->dst);
    return 0;
}

static void hosts_free(struct core *K) {
    hosts_t *H = K->hosts;
    if (!H) return;
    for (int32_t i = 0; i < H->nh; i++) {
        ht_t *h = &H->h[i];
        free(h->aq); free(h->ready.v); free(h->tm); free(h->added);
    }
    for (int32_t i = 0; i < H->nsf; i++) {
        sf_t *s = &H->sf[i];
        free(s->acked); free(s->sends); free(s->queued); free(s->sent_at); free(s->tl_t);
        free(s->tl_s); free(s->retx.v); free(s->ports); free(s->draws); free(s->uses);
    }
    for (int32_t i = 0; i < H->nrf; i++) {
        rf_t *x = &H->rf[i];
        free(x->got); free(x->ce); free(x->rdist); free(x->pend);
    }
    for (int32_t i = 0; i < H->ncn; i++) { free(H->cn[i].sending.v); free(H->cn[i].active.v); }
    free(H->h); free(H->sf); free(H->rf); free(H->cn);
    free(H->txm.k); free(H->txm.v); free(H->rxm.k); free(H->rxm.v);
    free(H);
    K->hosts = NULL;
}

/* ---- Python's calls ---- */
void hc_setup(struct core *K, int32_t nhosts, int32_t mss, int32_t window, int32_t ack_every,
              int32_t nack_gap, double rto, double ack_delay, double tick_s, double tick_us) {
    hosts_free(K);
    hosts_t *H = calloc(1, sizeof(hosts_t));
    K->hosts = H;
    H->nh = nhosts;
    H->h = calloc(nhosts ? nhosts : 1, sizeof(ht_t));
    H->mss = mss; H->window = window; H->ack_every = ack_every; H->nack_gap = nack_gap;
    H->rto = rto; H->ack_delay = ack_delay; H->tick_s = tick_s; H->tick_us = tick_us;
}

void hc_host(struct core *K, int32_t hi, int32_t link, double us_per_byte,
             const uint8_t *mac, const uint8_t *gw, uint32_t ip, int64_t tick_handle,
             int32_t cc_kind, const double *cc) {
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    h->link = link; h->upb = us_per_byte; h->ip = ip; h->tick_handle = tick_handle;
    memcpy(h->mac, mac, 6); memcpy(h->gw, gw, 6);
    cc_t *c = &h->tmpl;
    c->kind = cc_kind;
    c->cwnd = cc[0]; c->cap = cc[1]; c->floor = cc[2]; c->hold = cc[3];
    c->has_base = cc[4] != 0; c->base_rtt = cc[5]; c->measure_base = cc[6] != 0;
    c->qtarget = cc[7]; c->has_target = cc[8] != 0; c->target = cc[9];
    c->has_delay = cc[10] != 0; c->delay = cc[11];
    c->ai = cc[12]; c->pi = cc[13]; c->beta = cc[14]; c->max_mdf = cc[15];
    c->ssthresh = cc[16]; c->alpha = cc[17]; c->g = cc[18]; c->win_end = cc[19];
    c->w = cc[20];
}

void hc_job(struct core *K, int32_t hi, int32_t job, int32_t ect) {
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    h->has_job = 1; h->job = job; h->ect = ect;
}

void hc_link_host(struct core *K, int32_t link, int32_t hi) { K->links[link].dst_host = hi; }

int32_t hc_open(struct core *K, int32_t hi, int64_t flow, int32_t rank, int32_t dst,
                int32_t step, int64_t nbytes, uint32_t dst_ip, int32_t prev, int32_t cache,
                double now_s, double first_rto, double min_rto, double max_rto, int32_t np,
                const int32_t *ports, const int32_t *draws, int32_t ndraws, int32_t *joined) {
    hosts_t *H = K->hosts;
    int32_t ci;
    *joined = 0;
    if (prev >= 0 && H->cn[H->sf[prev].conn].active.n) {
        ci = H->sf[prev].conn;
        *joined = 1;
    } else {
        int32_t old = prev >= 0 ? H->sf[prev].conn : -1;
        if (H->ncn == H->capcn) {
            H->capcn = H->capcn ? 2 * H->capcn : 256;
            H->cn = realloc(H->cn, H->capcn * sizeof(cn_t));
        }
        ci = H->ncn++;
        cn_t *c = &H->cn[ci];
        memset(c, 0, sizeof(cn_t));
        cn_t *o = old >= 0 ? &H->cn[old] : NULL;
        if (o && !o->active.n && o->has_last_finish && now_s - o->last_finish <= o->rtt.rto)
            c->cc = o->cc;   /* the previous connection's algorithm, taken over */
        else
            c->cc = H->h[hi].tmpl;
        c->rtt.lo = min_rto; c->rtt.hi = max_rto;
        c->rtt.rto = rtt_clamp(&c->rtt, first_rto);
        if (cache >= 0 && H->cn[cache].rtt.has) {   /* RttEstimator.seed */
            rtt_t *p = &H->cn[cache].rtt;
            c->rtt.has = 1; c->rtt.srtt = p->srtt; c->rtt.rttvar = p->rttvar;
            double v = 4 * p->rttvar;
            c->rtt.rto = rtt_clamp(&c->rtt, p->srtt + (v > 0.0 ? v : 0.0));
        }
    }
    if (H->nsf == H->capsf) {
        H->capsf = H->capsf ? 2 * H->capsf : 256;
        H->sf = realloc(H->sf, H->capsf * sizeof(sf_t));
    }
    int32_t fi = H->nsf++;
    sf_t *s = &H->sf[fi];
    memset(s, 0, sizeof(sf_t));
    int64_t npkts = (nbytes + H->mss - 1) / H->mss;
    if (npkts < 1) npkts = 1;
    s->flow = flow; s->host = hi; s->conn = ci; s->rank = rank; s->dst = dst; s->step = step;
    s->dst_ip = dst_ip; s->npkts = (int32_t)npkts; s->nbytes = nbytes;
    s->acked = calloc(npkts, 1); s->sends = calloc(npkts, 1); s->queued = calloc(npkts, 1);
    s->sent_at = calloc(npkts, sizeof(double));
    s->np = np;
    s->ports = malloc(np * sizeof(int32_t));
    memcpy(s->ports, ports, np * sizeof(int32_t));
    s->uses = calloc(np, sizeof(int64_t));
    if (ndraws) {
        s->draws = malloc(ndraws * sizeof(int32_t));
        memcpy(s->draws, draws, ndraws * sizeof(int32_t));
        s->mask = (uint32_t)ndraws - 1;
    }
    cn_t *c = &H->cn[ci];
    iq_push(&c->sending, fi);
    iq_push(&c->active, fi);
    imap_put(&H->txm, hkey(hi, flow), fi);
    H->h[hi].n_tx++;
    return fi;
}

int32_t hc_conn_of(struct core *K, int32_t f) { return ((hosts_t *)K->hosts)->sf[f].conn; }

void hc_make_ready(struct core *K, int32_t hi, int32_t f) {
    hosts_t *H = K->hosts;
    host_ready(H, &H->h[hi], f);
}

void hc_ensure_tick(struct core *K, int32_t hi, double now) {
    host_ensure_tick(K, &((hosts_t *)K->hosts)->h[hi], now);
}

int32_t hc_kick(struct core *K, int32_t hi, double now) {
    K->error = 0;
    return host_kick(K, hi, now);
}

int32_t hc_rx_new(struct core *K, int32_t hi, int64_t flow, int32_t src, int32_t dst,
                  int32_t npkts, uint32_t peer_ip) {
    hosts_t *H = K->hosts;
    if (H->nrf == H->caprf) {
        H->caprf = H->caprf ? 2 * H->caprf : 256;
        H->rf = realloc(H->rf, H->caprf * sizeof(rf_t));
    }
    int32_t ri = H->nrf++;
    rf_t *x = &H->rf[ri];
    memset(x, 0, sizeof(rf_t));
    x->flow = flow; x->host = hi; x->src = src; x->dst = dst; x->npkts = npkts;
    x->peer_ip = peer_ip; x->sport = H_ROCE; x->highest = -1;
    x->got = calloc(npkts ? npkts : 1, 1);
    x->ce = calloc(npkts ? npkts : 1, 1);
    imap_put(&H->rxm, hkey(hi, flow), ri);
    return ri;
}

int32_t hc_arrive(struct core *K, int32_t hi, double now, const uint8_t *frame, uint32_t have,
                  uint32_t len) {
    K->error = 0;
    return host_frame(K, hi, frame, have, len, now);
}

void hc_bad(struct core *K, int32_t hi) {
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    h->frames_received++;
    h->bad_frames++;
}

int32_t hc_rx_done(struct core *K, int32_t r) {
    rf_t *x = &((hosts_t *)K->hosts)->rf[r];
    return x->received == x->npkts;
}

void hc_tick_timers(struct core *K, int32_t hi, double now) {
    hosts_t *H = K->hosts;
    ht_t *h = &H->h[hi];
    h->tick_sched = 0;
    double now_s = now * 1e-6;
    while (h->ntm && h->tm[0].t <= now_s) {
        tmr_t e = tm_pop(h);
        sf_t *s = &H->sf[e.f];
        if (!s->has_armed || e.t != s->armed) continue;
        s->has_armed = 0;
        if (s->n_acked == s->npkts) continue;
        sf_on_tick(H, s, now_s);
        host_arm(H, h, e.f);
        host_ready(H, h, e.f);
    }
}

int32_t hc_take_added(struct core *K, int32_t hi, int64_t *out, int32_t cap) {
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    int32_t n = (int32_t)h->nadded < cap ? (int32_t)h->nadded : cap;
    memcpy(out, h->added, n * sizeof(int64_t));
    memmove(h->added, h->added + n, (h->nadded - n) * sizeof(int64_t));
    h->nadded -= n;
    return n;
}

int32_t hc_rx_tick(struct core *K, int32_t hi, int32_t r, double now) {
    hosts_t *H = K->hosts;
    rf_t *x = &H->rf[r];
    double now_s = now * 1e-6;
    if (x->npend && now_s - x->last_ack >= H->ack_delay) rf_ack(H, &H->h[hi], x, now_s, 0, 0);
    if (!x->npend) x->in_set = 0;
    return x->npend != 0;
}

int32_t hc_tick_end(struct core *K, int32_t hi, double now, int32_t pending) {
    K->error = 0;
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    if (host_kick(K, hi, now) < 0) return -1;
    if (pending || h->n_fin < h->n_tx) host_ensure_tick(K, h, now);
    return 0;
}

void hc_counts(struct core *K, int32_t hi, int64_t *o) {
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    o[0] = h->frames_sent; o[1] = h->bytes_sent; o[2] = h->frames_received;
    o[3] = h->bad_frames;
}

void hc_set_counts(struct core *K, int32_t hi, const int64_t *in) {
    ht_t *h = &((hosts_t *)K->hosts)->h[hi];
    h->frames_sent = in[0]; h->bytes_sent = in[1]; h->frames_received = in[2];
    h->bad_frames = in[3];
}

void hc_tx_stats(struct core *K, int32_t f, int64_t *o, double *d) {
    hosts_t *H = K->hosts;
    sf_t *s = &H->sf[f];
    rtt_t *r = &H->cn[s->conn].rtt;
    o[0] = s->npkts; o[1] = s->nbytes; o[2] = s->packets_sent; o[3] = s->retransmissions;
    o[4] = s->timeouts; o[5] = s->nacks; o[6] = s->trim_nacks; o[7] = s->n_acked;
    o[8] = s->ce_acked; o[9] = s->spurious; o[10] = s->n_acks; o[11] = s->has_start;
    o[12] = s->has_finish; o[13] = r->has;
    d[0] = s->start; d[1] = s->finish; d[2] = s->w_sum; d[3] = r->srtt; d[4] = r->rto;
}

void hc_tx_uses(struct core *K, int32_t f, int64_t *o) {
    sf_t *s = &((hosts_t *)K->hosts)->sf[f];
    memcpy(o, s->uses, s->np * sizeof(int64_t));
}

void hc_rx_stats(struct core *K, int32_t r, int64_t *o, double *d) {
    rf_t *x = &((hosts_t *)K->hosts)->rf[r];
    o[0] = x->npkts; o[1] = x->bytes; o[2] = x->received; o[3] = x->packets;
    o[4] = x->duplicates; o[5] = x->reordered; o[6] = x->has_start; o[7] = x->has_finish;
    o[8] = x->rdist != NULL; o[9] = x->trimmed;
    d[0] = x->start; d[1] = x->finish;
}

void hc_rx_rdist(struct core *K, int32_t r, int64_t *o) {
    rf_t *x = &((hosts_t *)K->hosts)->rf[r];
    if (x->rdist) memcpy(o, x->rdist, x->npkts * sizeof(int64_t));
    else memset(o, 0, x->npkts * sizeof(int64_t));
}
"""
