/*
 * p4fabric -- constants of the v1model fabric program.
 *
 * The controller-contract constants both data planes share are in
 * contract.p4; this file adds the v1model-only ones.  model/lb.py mirrors
 * these numbers: change both together.
 */
#ifndef _P4FABRIC_DEFINES_P4_
#define _P4FABRIC_DEFINES_P4_

#include "contract.p4"   /* the constants both data planes share */

/* ---- ports --------------------------------------------------------------- */
/* 9-bit v1model ports.  The CPU port follows the common BMv2 convention
 * (simple_switch_grpc --cpu-port 255); the drop port is 511. */
const bit<9> CPU_PORT = 255;

/* ---- egress priority (standard_metadata.priority) ------------------------ */
/* Controller packet-outs (the failure loop's liveness probes) take this
 * strict-priority egress queue; data stays at 0.  Why: a probe waiting in
 * the same queue as an incast is tail-dropped with it, and the link it
 * tests looks dead while it is merely full.  Switches must be started with
 * --priority-queues 2 or more (BMv2 drops a packet whose priority has no
 * queue; p4switch then serves it from its one queue). */
const bit<3> PRIO_CONTROL = 1;

/* ---- v1model-only table size --------------------------------------------- */
#define WAM_SLOT_SIZE      16384    /* range entries, summed over groups     */

#endif /* _P4FABRIC_DEFINES_P4_ */
