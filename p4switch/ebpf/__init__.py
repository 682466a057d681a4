"""The eBPF back end: v1model programs compiled to a tc ``sched_cls`` program (``cgen``), built
with clang (``toolchain``), loaded through libbpf (``bpf``) and driven through the pipeline's
control-plane contract (``dataplane.EbpfPipeline``). See docs/p4switch-ebpf.md."""
