"""Pure models of the fabric, the bottom layer every other fabric package imports.

- ``spec``: the fabric as data (fat-tree, leaf-spine, hosts, links, ports, addresses);
- ``entries``: the table entries fabric.p4's controller contract consists of, and their diffs;
- ``schemes``: the load-balancing scheme contract and its one registry;
- ``lb``: the reference model of fabric.p4's member selection, line by line;
- ``routing``: graph -> every switch's entries (next hops, groups, schemes);
- ``paths``: the path a host's packet takes (the controller's own prediction);
- ``entropy``: the UDP ports of collective traffic (RoCEv2's, and a QP's source port);
- ``pipeline_target``: the same entries applied to a p4switch pipeline object directly;
- ``tna``: the same entries as p4src/tna/fabric.p4 (Tofino) takes them.

Pure means: no I/O, no clock, no threads, no gRPC; only p4switch's face (the match kinds,
``TableEntry`` and ``PipelineAPI``, which load no pipeline) and networkx below it. docs/architecture.md has the layers.
"""
