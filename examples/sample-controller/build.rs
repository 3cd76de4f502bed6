fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Writes $OUT_DIR/kube_codegen.rs (both Foo versions, clientset, listers, informers, apply
    // configurations, conversions) and prints cargo:rerun-if-changed for the CRD. The
    // two-version CRD: its v1alpha1 is the default install's (artifacts/crd.yaml).
    kube_codegen::Builder::new()
        .input("artifacts/crd-conversion.yaml")
        .generate()?;
    Ok(())
}
