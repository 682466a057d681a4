/*
 * v1model.p4 -- the v1model architecture as p4switch provides it.
 * Written for p4fabric from the v1model documentation and the behaviour of BMv2's
 * simple_switch: standard metadata, the counter/meter/register/hash/checksum externs, packet
 * replication primitives, the six programmable blocks and the V1Switch package.
 *
 * Versions: a program may define V1MODEL_VERSION before including this file. Without it the
 * version is 20180101, as with p4c's own v1model.p4: counters, meters and registers are
 * indexed by bit<32>. From 20200408 on, the index type is a type parameter of the extern
 * (counter<I>, meter<I>, register<T, I>) and ports have the type PortId_t.
 */
#ifndef P4SWITCH_V1MODEL_P4_
#define P4SWITCH_V1MODEL_P4_
/* The guard macro p4c's v1model.p4 defines: programs test it with #ifdef _V1_MODEL_P4_. */
#define _V1_MODEL_P4_

#include <core.p4>

match_kind {
    range,
    optional,
    selector
}

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#define P4SWITCH_PORT_T PortId_t
#else
#define P4SWITCH_PORT_T bit<9>
#endif

/* Per-packet intrinsic metadata. Ports are 9 bits wide; 511 is the drop port. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
    P4SWITCH_PORT_T ingress_port;
    P4SWITCH_PORT_T egress_spec;
    P4SWITCH_PORT_T egress_port;
    bit<32> instance_type;
    bit<32> packet_length;
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;
    bit<1>  checksum_error;
    error   parser_error;
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;
}
#undef P4SWITCH_PORT_T

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

#if V1MODEL_VERSION >= 20200408
/* An array of counters, indexed 0..size-1 by a value of type I; an index out of range
 * counts nothing. */
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
/* An array of counters, indexed 0..size-1; an index out of range counts nothing. */
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

/* One counter per entry of the table that names it in its `counters` property. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Two-rate three-colour meters; the colour written is 0 green, 1 yellow, 2 red. */
#if V1MODEL_VERSION >= 20200408
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

/* One meter per entry of the table that names it in its `meters` property. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of state cells of type T, readable and writable by the data plane (an index
 * out of range reads 0 and writes nothing). */
#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
    register(bit<32> size);
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

/* Table implementations: action profiles (members) and selectors (groups chosen by hash). */
extern action_profile {
    action_profile(bit<32> size);
}

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

/* A uniformly distributed value in lo..hi. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send the data to the control plane as a digest message of type T. */
extern void digest<T>(in bit<32> receiver, in T data);

/* Drop the packet at the end of the current pipeline (egress_spec := drop port, mcast_grp := 0). */
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash of data) mod max, or base when max is 0. */
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Checksums over a list of fields (csum16: the Internet checksum). */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);
/* The same, with the unparsed payload appended to the data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Packet replication. Metadata fields annotated @field_list(index) are preserved. */
extern void resubmit_preserving_field_list(bit<8> index);
extern void recirculate_preserving_field_list(bit<8> index);
extern void clone(in CloneType type, in bit<32> session);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Emit at most length bytes of the packet. */
extern void truncate(in bit<32> length);

/* Debugging aids: abort processing of the packet when check is false. */
extern void assert(in bool check);
extern void assume(in bool check);

/* Log a message; "{}" in msg is replaced by the fields of data. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The programmable blocks. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr, inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr, inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif
