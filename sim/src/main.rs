fn main() {
    mosaic_sim::x();
}
