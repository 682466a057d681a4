/* -*- P4_16 -*- */
/*
 * p4fabric -- the fabric switch program (v1model).
 *
 * One program for every leaf/spine/core switch of a fat-tree or leaf-spine.
 * IPv4 LPM routing to a direct next hop or to a load-balancing group whose
 * scheme (ECMP, flowlet, random, destination rotation, Whack-a-Mole) the
 * controller picks per group at run time.  See p4src/README.md for the
 * controller contract (tables, keys, actions, registers, counters).
 *
 * Plain P4_16 + v1model: compiles unchanged with p4c (bmv2 back end) and runs
 * on p4switch.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/defines.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/checksum.p4"
#include "include/ingress.p4"
#include "include/egress.p4"

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
