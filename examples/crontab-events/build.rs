fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Writes $OUT_DIR/kube_codegen.rs (types, clientset, listers, informers, apply
    // configurations, validation) and prints cargo:rerun-if-changed for the CRD.
    kube_codegen::Builder::new()
        .input("crd/crontab.yaml")
        .generate()?;
    Ok(())
}
