fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Writes $OUT_DIR/kube_codegen.rs (only when its bytes change) and prints
    // cargo:rerun-if-changed for every input file and directory. The second input is the
    // generator's kitchen-sink fixture, so its round-trip behaviour is tested here too.
    kube_codegen::Builder::new()
        .input("crds")
        .input("../kube-codegen/tests/fixtures/kitchen.yaml")
        .generate()?;
    Ok(())
}
