// Builds the BPF scheduler (src/bpf/main.bpf.c, one translation unit) into a
// skeleton, and the Rust bindings of src/bpf/intf.h.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("BPF build setup (is clang installed?)")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .add_cflag("-fms-extensions")
        .add_cflag("-Wno-microsoft-anon-tag")
        .compile_link_gen()
        .expect("BPF build");
}
