/*
 * core.p4 -- the P4_16 core library as p4switch provides it.
 * Written for p4fabric from the P4_16 language specification: the built-in error codes, the
 * three core match kinds, the packet_in / packet_out externs, verify() and NoAction.
 */
#ifndef P4SWITCH_CORE_P4_
#define P4SWITCH_CORE_P4_
/* The guard macro p4c's core.p4 defines: programs test it with #ifdef _CORE_P4_. */
#define _CORE_P4_

/* The order fixes the numeric codes targets report (NoError is 0). */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed. */
extern packet_in {
    /* Copy the next bits of the packet into a fixed-size header and make it valid. */
    void extract<T>(out T hdr);
    /* Variable-size headers (not supported by p4switch). */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* The next bits of the packet as a T, without consuming them. */
    T lookahead<T>();
    /* Skip bits of the packet. */
    void advance(in bit<32> sizeInBits);
    /* Packet length in bytes. */
    bit<32> length();
}

/* The packet being assembled by a deparser. */
extern packet_out {
    /* Append a header (if valid), or every valid header of a stack / struct, in order. */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false, stop parsing with the given error. */
extern void verify(in bool check, in error toSignal);

/* At compile time: an error (with the message, if given) when check is false; else true. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

/* The action that does nothing; the implicit default of tables. */
@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

#endif
