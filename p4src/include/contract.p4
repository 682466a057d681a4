/*
 * p4fabric -- the constants of the controller contract, shared by both data
 * planes: p4src/fabric.p4 (v1model, through include/defines.p4) and
 * p4src/tna/fabric.p4 (Tofino) include this one file, so a change here reaches
 * both.  What differs between them (CPU port, WaM slot-table size, egress
 * priority) stays in each program; tests/p4src/test_tna_contract.py fails on a
 * redefinition or on a contract name one program lacks.
 *
 * Sizes are #defines because they are used as extern constructor arguments;
 * typed values are consts.  model/lb.py mirrors these numbers: change both
 * together.
 */
#ifndef _P4FABRIC_CONTRACT_P4_
#define _P4FABRIC_CONTRACT_P4_

/* ---- ports --------------------------------------------------------------- */
#define PORT_COUNT 512              /* size of every per-port array (2^9) */

/* ---- protocol numbers ---------------------------------------------------- */
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<2>  ECN_NOT_ECT    = 0;
const bit<2>  ECN_CE         = 3;

/* ---- load-balancing limits ------------------------------------------------ */
#define LB_MAX_GROUPS      256      /* group ids must be < this              */
#define LB_MAX_MEMBERS     64       /* member indexes must be < this         */
#define LB_MEMBER_CTR_SIZE 16384    /* LB_MAX_GROUPS * LB_MAX_MEMBERS        */
#define FLOWLET_SLOTS      4096     /* flowlet register cells (shared)       */
#define ROT_SLOTS          16384    /* rotation counters; dst_id < this      */
#define WAM_L_MAX          16       /* WaM: m = 2^l with 0 <= l <= 16        */

/* Table sizes (entries) both programs share. */
#define IPV4_LPM_SIZE      4096
#define LB_GROUP_SIZE      256      /* = LB_MAX_GROUPS                       */
#define LB_MEMBER_SIZE     16384    /* = LB_MEMBER_CTR_SIZE                  */

/* ---- scheme ids (meta.lb.scheme; informational, set by lb_group) ---------- */
const bit<8> SCHEME_NONE     = 0;
const bit<8> SCHEME_ECMP     = 1;
const bit<8> SCHEME_FLOWLET  = 2;
const bit<8> SCHEME_RANDOM   = 3;
const bit<8> SCHEME_ROTATE   = 4;
const bit<8> SCHEME_WAM      = 5;

/* ---- drop reasons: the index into MyIngress.drop_ctr ---------------------- */
#define DROP_REASON_COUNT 16
const bit<8> DROP_NONE          = 0;   /* never counted                      */
const bit<8> DROP_PARSER_ERROR  = 1;   /* parser error (TNA: also bad version/IHL) */
const bit<8> DROP_BAD_CHECKSUM  = 2;   /* IPv4 header checksum wrong         */
const bit<8> DROP_NOT_IPV4      = 3;   /* no IPv4 header (ARP, IPv6, ...)    */
const bit<8> DROP_TTL_EXPIRED   = 4;   /* incoming TTL 0 or 1                */
const bit<8> DROP_ROUTE_MISS    = 5;   /* ipv4_lpm default action            */
const bit<8> DROP_ROUTE_BLACKHOLE = 6; /* ipv4_lpm entry with drop_route()   */
const bit<8> DROP_LB_GROUP_MISS = 7;   /* route names a group lb_group lacks */
const bit<8> DROP_LB_EMPTY      = 8;   /* group has n_members == 0           */
const bit<8> DROP_LB_MEMBER_MISS = 9;  /* lb_member or wam_slot miss         */

#endif /* _P4FABRIC_CONTRACT_P4_ */
