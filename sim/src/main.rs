fn main() {
    std::process::exit(mosaic_sim::cli::main());
}
