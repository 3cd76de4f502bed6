fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Writes $OUT_DIR/kube_codegen.rs (the Foo type, clientset, lister, informer and apply
    // configurations) and prints cargo:rerun-if-changed for the CRD.
    kube_codegen::Builder::new()
        .input("artifacts/crd.yaml")
        .generate()?;
    Ok(())
}
