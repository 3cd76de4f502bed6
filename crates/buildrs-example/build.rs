fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Writes $OUT_DIR/kube_codegen.rs (only when its bytes change) and prints
    // cargo:rerun-if-changed for every input file and directory. The second input is the
    // generator's kitchen-sink fixture, so its round-trip behaviour is tested here too. That
    // fixture keeps non-structural forms (`anyOf`/`oneOf` with types, an untyped property) that
    // kube-apiserver refuses in a v1 CRD, to test how they map: `lenient` generates from it
    // (printing a warning per violation) where the default would refuse it.
    kube_codegen::Builder::new()
        .input("crds")
        .input("../kube-codegen/tests/fixtures/kitchen.yaml")
        .options(kube_codegen::Options {
            lenient: true,
            ..Default::default()
        })
        .generate()?;
    Ok(())
}
