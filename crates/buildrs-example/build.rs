fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Writes $OUT_DIR/kube_codegen.rs (only when its bytes change) and prints
    // cargo:rerun-if-changed for crds/ and every file in it.
    kube_codegen::Builder::new().input("crds").generate()?;
    Ok(())
}
