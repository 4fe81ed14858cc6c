// Builds the runnable-wait tracer (src/bpf/waits.bpf.c) into a libbpf-rs
// skeleton (OUT_DIR/bpf_skel.rs) with scx_cargo, as the scheduler's build.rs
// does: the same clang flags and the same vmlinux.h.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("BPF build setup (is clang installed? BPF_CLANG=clang-19)")
        .enable_skel("src/bpf/waits.bpf.c", "bpf")
        .compile_link_gen()
        .expect("BPF build of src/bpf/waits.bpf.c");
}
